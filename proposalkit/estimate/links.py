"""The links a tensor-parallel replica's all-reduces cross: GPU to GPU within a node (NVLink or PCIe),
and the network between nodes, per GPU (estimate/inference.py Replica.link_bandwidth)."""

from __future__ import annotations

import math

# GPU-to-GPU bandwidth, one direction (half the datasheet's bidirectional figure), by catalog id.
INTERCONNECT = {
    "a100-40gb": 300e9,     # A100 datasheet, SXM: NVLink 600 GB/s
    "a100-80gb": 300e9,     # A100 datasheet, SXM: NVLink 600 GB/s
    "h100-80gb": 450e9,     # H100 datasheet, SXM: NVLink 900 GB/s
    "h100-96gb-500w": 450e9,  # torchtitan benchmarks: 8 H100s per host "fully connected with NVLink" (SXM, 900 GB/s)
    "h200": 450e9,          # H200 datasheet, SXM: NVLink 900 GB/s
    "b200": 900e9,          # HGX B200 datasheet: fifth-generation NVLink 1.8 TB/s per GPU
    "v100-32gb": 150e9,     # V100 datasheet, SXM2: NVLink 300 GB/s
    "h100-pcie": 64e9,      # H100 datasheet, PCIe: PCIe Gen5 128 GB/s (without the optional NVLink bridge)
    # AMD CDNA 3 white paper, Table 2: MI300X "P2P ring peak aggregate I/O bandwidth 896 GB/s (8 GPUs)", over
    # its 7 x16 Infinity Fabric links to the other 7 GPUs of the UBB node (fully connected: a group of t GPUs
    # has t − 1 of the 7 links, so fewer than 8 GPUs get that share of this figure: MESH_LINKS).
    "mi300x": 448e9,
    # MI250X datasheet: 8 Infinity Fabric links × 100 GB/s peak per card (OAM) of 2 GCDs; the catalog's rows
    # are per GCD: 800 GB/s ÷ 2 GCDs both ways.
    "mi250x": 200e9,
}
# GPUs whose node is a full mesh of point-to-point links, one to each peer (no switch): by catalog id, the links
# INTERCONNECT's figure adds up. A group of g GPUs reaches its g − 1 peers over g − 1 of them, so it gets
# (g − 1) / links of that figure (NVLink's switched nodes give every GPU its full figure at any group size).
MESH_LINKS = {
    "mi300x": 7,            # AMD CDNA 3 white paper: 7 Infinity Fabric links, one to each other GPU of the 8
}
# Any other GPU: PCIe Gen4 x16, 64 GB/s both ways (PCI-SIG PCIe 4.0: 16 GT/s × 16 lanes).
PCIE4_X16 = 32e9
# GPUs that share NVLink: one node's baseboard (HGX A100/H100/H200/B200: 8). A replica on more GPUs
# spans nodes, and its ring all-reduces cross the network at each node boundary: every GPU's ring
# traffic goes at the slower of NVLink and the GPU's share of the node's network. The default where no
# resource is pinned; a pinned resource's own node size (resources.yaml gpus_per_node) replaces it
# (Replica.node_gpus, set by the planner).
NODE_GPUS = 8
# Network bandwidth per GPU, one direction, between nodes, by catalog id: one compute-fabric port per GPU.
# (bytes per second, where the figure comes from); the resource catalog has no network figure of its own.
NETWORK = {
    "h100-80gb": (50e9, "DGX H100 user guide: 8 × ConnectX-7, 400 Gb/s InfiniBand each"),
    "h200": (50e9, "DGX H200 user guide: 8 × ConnectX-7, 400 Gb/s InfiniBand each"),
    "h100-96gb-500w": (50e9, "torchtitan benchmarks: Grand Teton hosts inter-connected at 400 Gb/s per GPU"),
    "b200": (50e9, "DGX B200 user guide: 8 × ConnectX-7, 400 Gb/s InfiniBand each"),
    "a100-40gb": (25e9, "DGX A100 user guide: 8 × ConnectX-6, 200 Gb/s HDR InfiniBand each"),
    "a100-80gb": (25e9, "DGX A100 user guide: 8 × ConnectX-6, 200 Gb/s HDR InfiniBand each"),
}
# Any other GPU: a 200 Gb/s HDR port per GPU, DGX A100's (a node with fewer ports is slower still).
NETWORK_DEFAULT = (25e9, "no figure for this GPU's nodes: DGX A100's, one 200 Gb/s HDR InfiniBand port per GPU "
                         "(DGX A100 user guide)")


def network_per_gpu(gpu_id: str) -> tuple[float, str]:
    """The inter-node bandwidth per GPU, one direction (bytes/s), and where the figure comes from."""
    return NETWORK.get(gpu_id, NETWORK_DEFAULT)


def tensor_parallel_link(gpu_id: str, group: int, node_gpus: int | None = None) -> float:
    """Bytes per second one GPU of a tensor-parallel group of `group` GPUs sends to its peers, one direction:
    INTERCONNECT (else PCIe Gen4 x16) within a node; a group over more than a node's GPUs crosses the network at
    each node boundary, so its ring goes at the slower of the two (NETWORK). On a full mesh (MESH_LINKS) a group
    within a node uses only the links to its own members."""
    link = INTERCONNECT.get(gpu_id, PCIE4_X16)
    node = node_gpus or NODE_GPUS
    if gpu_id in MESH_LINKS and 1 < group <= node:
        link *= min(group - 1, MESH_LINKS[gpu_id]) / MESH_LINKS[gpu_id]
    if math.ceil(group / node) > 1:
        return min(link, network_per_gpu(gpu_id)[0])
    return link


def ring_allreduce_seconds(size: float, group: int, bandwidth: float, latency: float) -> float:
    """One all-reduce of `size` bytes over `group` GPUs as a ring: 2(g − 1)/g of the bytes cross each GPU's link
    (Patarasuk & Yuan 2009) at `bandwidth` (achieved), plus a fixed latency. A reduce-scatter and an all-gather
    of the same tensor (sequence parallelism) move the same bytes. 0 for one GPU."""
    if group == 1:
        return 0.0
    return latency + 2 * (group - 1) / group * size / bandwidth

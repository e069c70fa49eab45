"""`proposalkit pilot` on one fixture per format (tests/data/pilot, our own numbers).

Every expected value is worked out by hand from the fixture beside it. Warm-up rule:
the first max(1, ceil(10% of logged steps)) steps are excluded; the steady figure is
the median of the rest. GiB = 2^30 bytes, MiB = 2^20.
"""

import json
from pathlib import Path

import pytest

from proposalkit.cli import main

DATA = Path(__file__).parent / "data" / "pilot"
GiB, MiB = 2**30, 2**20


def pilot_json(capsys, *args):
    assert main(["pilot", "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)["logs"]


def test_torchtune_per_gpu_unmasked_tokens_and_three_memory_statistics(capsys):
    [log] = pilot_json(capsys, str(DATA / "torchtune_log_1732300000.txt"))
    assert log["format"] == "torchtune"
    # 6 steps, warm-up max(1, ceil(0.6)) = 1; median(2950, 3010, 2990, 3030, 3000) = 3000
    assert log["steps"] == {"logged": 6, "warmup_excluded": 1, "used": 5,
                            "warmup_rule": "the first max(1, ceil(10% of logged steps)) steps"}
    assert log["tokens_per_second_per_gpu"] == 3000.0
    assert log["tokens_per_second"] is None and log["gpus"] is None
    assert log["token_definition"].startswith("unmasked label tokens")
    # peak_memory_reserved max 21.25 GiB (steps 4-6); alloc and active max 18.75 (step 4)
    assert log["peak_memory"] == {"bytes": int(21.25 * GiB), "statistic": "reserved"}
    assert log["peak_memory_all"] == {"allocated": int(18.75 * GiB), "active": int(18.75 * GiB)}


def test_gpus_option_gives_the_whole_job_rate(capsys):
    [log] = pilot_json(capsys, "--gpus", "8", str(DATA / "torchtune_log_1732300000.txt"))
    assert (log["gpus"], log["tokens_per_second"]) == (8, 24000.0)     # 3000 × 8


def test_torchtitan_ansi_colours_and_thousands_separators(capsys):
    [log] = pilot_json(capsys, str(DATA / "torchtitan.log"))
    assert log["format"] == "torchtitan"
    # 10 steps, 1 warm-up (step 1, tps 1,204); steps 2-10 sorted: 5710 5744 5755 5762 5770 5781 5790 5799 5801
    assert log["steps"]["used"] == 9 and log["tokens_per_second_per_gpu"] == 5770.0
    # memory: max reserved, 34.75GiB from step 4 on
    assert log["peak_memory"] == {"bytes": int(34.75 * GiB), "statistic": "reserved"}


def test_megatron_tokens_from_global_batch_seq_length_and_time(capsys):
    [log] = pilot_json(capsys, str(DATA / "megatron.log"))
    assert log["format"] == "megatron" and log["gpus"] == 16       # world_size 16
    # 4 iteration lines, 1 warm-up; 256 × 4096 = 1,048,576 tokens per iteration over
    # 8.0 s = 131072, 8.192 s = 128000, 8.1 s = 129453.8 → median 129453.8; per GPU ÷ 16 = 8090.9
    assert log["tokens_per_second"] == 129453.8
    assert log["tokens_per_second_per_gpu"] == 8090.9
    # max reserved 52224 MB on rank 4 (MB = MiB) = 51 GiB; max allocated 40960 MB = 40 GiB
    assert log["peak_memory"] == {"bytes": 52224 * MiB, "statistic": "reserved"}
    assert log["peak_memory_all"] == {"allocated": 40960 * MiB}


def test_deepspeed_samples_times_seq_len(capsys):
    [log] = pilot_json(capsys, "--seq-len", "2048", str(DATA / "deepspeed.log"))
    # CurrSamplesPerSec 10.0 (warm-up), 16.0, 16.5, 15.5 → median 16 × 2048 = 32768
    assert log["format"] == "deepspeed" and log["tokens_per_second"] == 32768.0
    # Max_CA 23 GB (GB = 2^30) is reserved; MaxMemAllocated 20.5GB, Max_MA 20.5 GB
    assert log["peak_memory"] == {"bytes": 23 * GiB, "statistic": "reserved"}
    assert log["peak_memory_all"] == {"allocated": int(20.5 * GiB)}


def test_hf_trainer_state_whole_run_average(capsys):
    [log] = pilot_json(capsys, str(DATA / "trainer_state.json"))
    # num_input_tokens_seen 2,048,000 ÷ train_runtime 640 s = 3200; no per-step times: warm-up stays in
    assert log["format"] == "hf-trainer" and log["tokens_per_second"] == 3200.0
    assert log["steps"]["warmup_excluded"] is None and log["peak_memory"] is None
    assert "warm-up not excluded: trainer_state.json gives only the whole-run train_runtime" in log["notes"]


def test_hf_trainer_state_peak_allocated_from_the_trainers_memory_deltas(capsys):
    # The example's lora-sweep pilot (workloads/pilots/lora-sweep/trainer_state.json, skip_memory_metrics=False,
    # run on one H200 by benchmarks/device/example_pilot.py). Its final log_history entry: before_init_mem_gpu
    # 16,228,295,680 + init_mem_gpu_alloc_delta 0 + train_mem_gpu_alloc_delta 402,883,072 +
    # train_mem_gpu_peaked_delta 17,487,301,632 = 34,118,480,384 B (31.78 GiB) allocated at the peak.
    root = Path(__file__).resolve().parent.parent
    [log] = pilot_json(capsys, str(root / "workloads" / "pilots" / "lora-sweep" / "trainer_state.json"))
    assert log["peak_memory"] == {"statistic": "allocated", "bytes": 34_118_480_384}
    # the same run's torch.cuda.max_memory_allocated(), read by the script beside the log, agrees to the byte
    record = json.loads((root / "benchmarks" / "validation" / "example_pilots" / "lora-sweep.json").read_text())
    assert record["memory"]["max_allocated_bytes"] == 34_118_480_384
    # 409,600 tokens (200 steps × 2,048) ÷ train_runtime 63.2895 s = 6,471.85, printed to a tenth
    assert log["tokens_per_second"] == 6471.8
    assert record["steps"] * record["config"]["seq_len"] * record["config"]["micro_batch"] == 409_600


def test_hf_trainer_state_memory_deltas_that_sum_below_zero_are_refused(capsys, tmp_path):
    data = json.loads((DATA / "trainer_state.json").read_text())
    data["log_history"][-1].update(before_init_mem_gpu=1000, init_mem_gpu_alloc_delta=0,
                                   train_mem_gpu_alloc_delta=-5000, train_mem_gpu_peaked_delta=10)
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps(data))
    assert main(["pilot", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}" in err and "the peak allocated these sum to" in err and "Traceback" not in err


def test_llama_factory_rate_between_warmup_and_last_entry(capsys):
    [log] = pilot_json(capsys, str(DATA / "trainer_log.jsonl"))
    # 6 entries, 1 warm-up (step 5: 40960 tokens at 0:00:20); last: 245760 at 0:01:10
    # (245760 - 40960) / (70 - 20) = 204800 / 50 = 4096
    assert log["format"] == "llama-factory" and log["tokens_per_second"] == 4096.0
    # vram_reserved max 17.5 GiB (entries 3-6); vram_allocated max 15.75 (entry 4)
    assert log["peak_memory"] == {"bytes": int(17.5 * GiB), "statistic": "reserved"}
    assert log["peak_memory_all"] == {"allocated": int(15.75 * GiB)}


def test_vllm_serve_output_and_total_throughput(capsys):
    [log] = pilot_json(capsys, str(DATA / "vllm_serve.json"))
    # 51200 output tokens / 80 s = 640; (204800 + 51200) / 80 = 3200
    assert log["format"] == "vllm"
    assert (log["output_tokens_per_second"], log["total_tokens_per_second"]) == (640.0, 3200.0)
    assert log["tokens_per_second"] == 640.0 and log["peak_memory"] is None


def test_sglang_jsonl_with_bare_infinity_reports_the_last_result(capsys):
    [log] = pilot_json(capsys, str(DATA / "sglang_bench.jsonl"))
    # second line: 20000 / 40 s = 500 output, 120000 / 40 = 3000 total
    assert log["format"] == "sglang"
    assert (log["output_tokens_per_second"], log["total_tokens_per_second"]) == (500.0, 3000.0)
    assert log["method"].endswith("the last of 2 results in the file")


def test_text_output(capsys):
    assert main(["pilot", str(DATA / "megatron.log")]) == 0
    assert capsys.readouterr().out == (
        f"{DATA / 'megatron.log'}: megatron\n"
        "  steps: 4 logged, 1 warm-up excluded (the first max(1, ceil(10% of logged steps)) steps), 3 used\n"
        "  throughput: 129,453.8 tokens/s whole job, 8,090.9 tokens/s per GPU "
        "(all input tokens (global batch size × seq_length, padding included))\n"
        "  method: median of the 3 steps after warm-up\n"
        "  GPUs: 16 (world_size in the arguments block)\n"
        "  peak memory: 51.00 GiB reserved (54760833024 bytes); also allocated 40.00 GiB\n")


def test_yaml_throughput_block(capsys):
    assert main(["pilot", "--format", "yaml", str(DATA / "megatron.log")]) == 0
    out = capsys.readouterr().out
    assert out.endswith("throughput:\n  tokens_per_second: 129454\n  gpus: 16\n"
                        "  gpu:    # fill in: the GPU type the pilot ran on (a catalog id, e.g. a100-80gb)\n")


def test_forced_format_matches_detection(capsys):
    [log] = pilot_json(capsys, "--log-format", "torchtitan", str(DATA / "torchtitan.log"))
    assert log["tokens_per_second_per_gpu"] == 5770.0


def test_trtllm_bench_output_tokens_and_gpus_from_tp_pp(capsys):
    [log] = pilot_json(capsys, str(DATA / "trtllm_bench.txt"))
    # TP 4 × PP 1 = 4 GPUs; Total Output Throughput 3200, per GPU 800 (= 3200 / 4), total tokens 9600
    assert log["format"] == "trtllm-bench" and log["gpus"] == 4
    assert (log["tokens_per_second"], log["tokens_per_second_per_gpu"]) == (3200.0, 800.0)
    assert (log["output_tokens_per_second"], log["total_tokens_per_second"]) == (3200.0, 9600.0)


def test_mlperf_offline_summary(capsys):
    [log] = pilot_json(capsys, str(DATA / "mlperf_log_summary.txt"))
    assert log["format"] == "mlperf" and log["output_tokens_per_second"] == 3840.5   # `Tokens per second: 3840.5`
    assert log["total_tokens_per_second"] is None


def test_nvidia_smi_units_in_values_and_na(capsys):
    [log] = pilot_json(capsys, str(DATA / "nvidia_smi.csv"))
    # 6 rows, one [N/A] skipped; peak memory.used 72704 MiB on GPU 1 = 71 GiB; GPUs 0 and 1
    assert log["format"] == "nvidia-smi" and log["gpus"] == 2
    assert log["peak_memory"] == {"bytes": 72704 * MiB, "statistic": "device"}
    assert log["tokens_per_second"] is None and log["tokens_per_second_per_gpu"] is None


def test_nvidia_smi_nounits(capsys):
    [log] = pilot_json(capsys, str(DATA / "nvidia_smi_nounits.csv"))
    assert log["peak_memory"] == {"bytes": 38912 * MiB, "statistic": "device"} and log["gpus"] is None


def test_nvidia_smi_yaml_has_nothing_to_paste(capsys):
    assert main(["pilot", "--format", "yaml", str(DATA / "nvidia_smi.csv")]) == 0
    assert capsys.readouterr().out.endswith("# no throughput in this log: nothing to paste\n")


@pytest.mark.parametrize("name, reserved", [("axolotl.log", 17.5), ("axolotl_older.log", None)])
def test_axolotl_current_and_older_keys(capsys, name, reserved):
    [log] = pilot_json(capsys, str(DATA / name))
    # 4 dicts, 1 warm-up (400); median(2100, 2200, 2150) = 2150 per GPU
    assert log["format"] == "axolotl" and log["tokens_per_second_per_gpu"] == 2150.0
    # device_mem_reserved max 17.5 GiB (absent in the older log: then max_mem_allocated 15.25 GiB)
    expected = {"bytes": int(reserved * GiB), "statistic": "reserved"} if reserved else \
        {"bytes": int(15.25 * GiB), "statistic": "allocated"}
    assert log["peak_memory"] == expected


def test_even_number_of_steady_steps_averages_the_two_middle_ones(capsys, tmp_path):
    rates = [100, 2000, 2400, 2100, 2300]         # 5 steps, 1 warm-up; steady sorted 2000 2100 2300 2400
    log = tmp_path / "tune.log"
    log.write_text("".join(f"Step {n} | loss:1.0 tokens_per_second_per_gpu:{r}\n" for n, r in enumerate(rates, 1)))
    [out] = pilot_json(capsys, str(log))
    assert out["tokens_per_second_per_gpu"] == 2200.0     # (2100 + 2300) / 2


def test_lightning_items_whole_job_and_per_device(capsys):
    [log] = pilot_json(capsys, str(DATA / "metrics.csv"))
    # 5 throughput rows (the step-0 row has none), 1 warm-up. Whole job: sorted 64000 64800 65536 66000
    # → (64800 + 65536) / 2 = 65168; per device: 16000 16200 16384 16500 → (16200 + 16384) / 2 = 16292
    assert log["format"] == "lightning"
    assert (log["tokens_per_second"], log["tokens_per_second_per_gpu"], log["gpus"]) == (65168.0, 16292.0, 4)


def test_lightning_samples_with_pipe_separator_need_seq_len(capsys):
    [log] = pilot_json(capsys, "--seq-len", "1024", str(DATA / "metrics_samples.csv"))
    # 4 rows, 1 warm-up; whole job median(8, 9, 10) = 9 samples/s × 1024 = 9216; device 4.5 × 1024 = 4608
    assert (log["tokens_per_second"], log["tokens_per_second_per_gpu"], log["gpus"]) == (9216.0, 4608.0, 2)
    assert main(["pilot", str(DATA / "metrics_samples.csv")]) == 2
    assert capsys.readouterr().err == (
        f"{DATA / 'metrics_samples.csv'}: Lightning logged samples per second, not items (tokens); "
        "expected --seq-len N (tokens per sample) to convert\n")


def test_vllm_offline_throughput_counts_prompt_and_output(capsys):
    [log] = pilot_json(capsys, str(DATA / "vllm_throughput.json"))
    # 1,500,000 tokens / 125 s = 12000 (prompt + output; the file has no output-only count)
    assert log["format"] == "vllm-throughput"
    assert (log["tokens_per_second"], log["total_tokens_per_second"], log["output_tokens_per_second"]) == \
        (12000.0, 12000.0, None)


def test_yaml_leaves_gpus_to_fill_when_the_log_does_not_say(capsys):
    assert main(["pilot", "--format", "yaml", str(DATA / "vllm_serve.json")]) == 0
    assert capsys.readouterr().out.endswith(
        "throughput:\n  tokens_per_second: 640\n  gpus:   # fill in: the log does not give the GPU count\n"
        "  gpu:    # fill in: the GPU type the pilot ran on (a catalog id, e.g. a100-80gb)\n")

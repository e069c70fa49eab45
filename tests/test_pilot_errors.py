"""`proposalkit pilot` on bad logs: exit 2, one line naming the file and what was expected,
nothing on stdout, never a traceback."""

from pathlib import Path

import pytest

from proposalkit.cli import main

DATA = Path(__file__).parent / "data" / "pilot"

TUNE = ("Step {n} | loss:1.5 lr:2e-05 tokens_per_second_per_gpu:{tps} peak_memory_active:10.0 "
        "peak_memory_alloc:10.0 peak_memory_reserved:12.0 grad_norm:1.0\n")
TITAN = "step: {n}  loss: 3.0000  memory: 30.00{unit}(40.00%)  tps: 5,000  tflops: 300.00  mfu: 30.00%\n"


def run(capsys, tmp_path, text, *args, name="pilot.log"):
    path = tmp_path / name
    path.write_text(text)
    code = main(["pilot", *args, str(path)])
    out, err = capsys.readouterr()
    assert out == ""
    return code, err.replace(str(path), "LOG")


def test_empty_log(capsys, tmp_path):
    assert run(capsys, tmp_path, "\n  \n") == (2, (
        "LOG: empty log; expected a pilot log (torchtune, torchtitan, megatron, deepspeed, "
        "axolotl, trtllm-bench, mlperf, nvidia-smi, lightning, hf-trainer, llama-factory, vllm, sglang, "
        "vllm-throughput)\n"))


def test_unknown_format(capsys, tmp_path):
    assert run(capsys, tmp_path, "hello\nworld\n") == (2, (
        "LOG: unknown log format: no line of a known format; expected one of torchtune, torchtitan, "
        "megatron, deepspeed, axolotl, trtllm-bench, mlperf, nvidia-smi, lightning, hf-trainer, "
        "llama-factory, vllm, sglang, vllm-throughput (or name it with --log-format)\n"))


def test_too_few_steps_is_no_steady_state(capsys, tmp_path):
    text = "".join(TUNE.format(n=n, tps=1000) for n in (1, 2, 3))
    assert run(capsys, tmp_path, text) == (2, (
        "LOG: no steady state: 3 logged step(s), 1 of them warm-up; expected at least 4 logged steps "
        "(3 after warm-up)\n"))


def test_truncated_last_line(capsys, tmp_path):
    text = "".join(TUNE.format(n=n, tps=1000) for n in range(1, 6)) + "Step 6 | loss:1.5 lr:2e-05 tokens_per"
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:6: step line without tokens_per_second_per_gpu (truncated log?); "
        "expected `Step N | ... tokens_per_second_per_gpu:VALUE ...`\n"))


def test_cut_off_number_on_the_last_line(capsys, tmp_path):
    text = "".join(TUNE.format(n=n, tps=1000) for n in range(1, 6)) + TUNE.format(n=6, tps=1000)[:70]
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:6: truncated log: the last step line ends without a newline; expected complete lines\n"))


def test_mixed_formats(capsys, tmp_path):
    text = "".join(TUNE.format(n=n, tps=1000) for n in range(1, 6)) + TITAN.format(n=6, unit="GiB")
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:6: mixed formats: a torchtitan step line in a torchtune log; expected one log per file\n"))


def test_wrong_memory_unit_torchtitan(capsys, tmp_path):
    text = "".join(TITAN.format(n=n, unit="MiB") for n in range(1, 6))
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:1: memory in MiB; expected GiB (`memory: XX.XXGiB(YY.YY%)`)\n"))


def test_wrong_memory_unit_megatron(capsys, tmp_path):
    text = (DATA / "megatron.log").read_text().replace("memory (MB)", "memory (GB)")
    assert run(capsys, tmp_path, text) == (2, "LOG:11: memory in (GB); expected `memory (MB)` (MB = MiB)\n")


def test_megatron_iterations_without_arguments(capsys, tmp_path):
    lines = (DATA / "megatron.log").read_text().splitlines(keepends=True)
    text = "".join(line for line in lines if "iteration " in line)
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:1: iteration line before the arguments block; expected `seq_length` and `global_batch_size` "
        "in the arguments block to count tokens\n"))


def test_deepspeed_needs_seq_len(capsys, tmp_path):
    text = (DATA / "deepspeed.log").read_text()
    assert run(capsys, tmp_path, text) == (2, (
        "LOG: DeepSpeed logs samples per second, not tokens; expected --seq-len N (tokens per sample) to convert\n"))


def test_truncated_json(capsys, tmp_path):
    text = (DATA / "trainer_state.json").read_text()[:300]
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:8: truncated or invalid JSON (Unterminated string starting at); expected one JSON document or one JSON "
        "object a line\n"))


def test_truncated_jsonl_line(capsys, tmp_path):
    lines = (DATA / "trainer_log.jsonl").read_text().splitlines(keepends=True)
    text = "".join(lines[:5]) + lines[5][:40]
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:6: truncated or invalid JSON line; expected one JSON object a line\n"))


def test_trainer_state_without_token_count(capsys, tmp_path):
    text = (DATA / "trainer_state.json").read_text().replace("num_input_tokens_seen", "other")
    assert run(capsys, tmp_path, text) == (2, (
        "LOG: no token count; expected num_input_tokens_seen (TrainingArguments "
        "include_num_input_tokens_seen=True) and a positive train_runtime\n"))


def test_not_a_number_in_a_step_line(capsys, tmp_path):
    text = "".join(TUNE.format(n=n, tps="fast" if n == 3 else 1000) for n in range(1, 6))
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:3: not a number in a step line; expected `tokens_per_second_per_gpu:NUMBER`\n"))


def test_every_bad_log_reported_together(capsys, tmp_path):
    (tmp_path / "a.log").write_text("")
    (tmp_path / "b.log").write_text("nothing\n")
    assert main(["pilot", str(tmp_path / "a.log"), str(tmp_path / "b.log"), str(DATA / "megatron.log")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and [line.split(": ")[1].split(";")[0] for line in err.splitlines()] == ["empty log", "unknown log format"]


def test_missing_file_and_directory(capsys, tmp_path):
    assert main(["pilot", str(tmp_path / "absent.log"), str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"{tmp_path / 'absent.log'}: cannot read (No such file or directory); expected a readable pilot log file\n"
        f"{tmp_path}: not a regular file (got a folder, expected a pilot log file)\n")


def test_special_files_are_refused_before_reading(capsys, tmp_path):
    # /dev/zero would be read without end (it once filled memory) and a FIFO would block for a writer.
    import os
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert main(["pilot", "/dev/zero", str(fifo)]) == 2
    assert capsys.readouterr().err == (
        "/dev/zero: not a regular file (got a character device, expected a pilot log file)\n"
        f"{fifo}: not a regular file (got a FIFO (named pipe), expected a pilot log file)\n")


def test_gpus_option_disagreeing_with_the_log(capsys, tmp_path):
    text = (DATA / "megatron.log").read_text()
    assert run(capsys, tmp_path, text, "--gpus", "8") == (2, (
        "LOG: --gpus 8 but the log says 16 (world_size in the arguments block)\n"))


@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_seq_len_must_be_positive(capsys, value):
    with pytest.raises(SystemExit) as stop:
        main(["pilot", "--seq-len", value, str(DATA / "deepspeed.log")])
    assert stop.value.code == 2
    assert f"argument --seq-len: '{value}' is not a positive integer" in capsys.readouterr().err


def test_nvidia_smi_value_unit_disagrees_with_header(capsys, tmp_path):
    text = "memory.used [MiB], memory.total [MiB]\n1024 MiB, 40960 MiB\n2 GiB, 40960 MiB\n"
    assert run(capsys, tmp_path, text) == (2, "LOG:3: memory.used '2 GiB'; expected MiB as the header says\n")


def test_nvidia_smi_header_unit_unknown(capsys, tmp_path):
    text = "memory.used [%], memory.total [MiB]\n10 %, 40960 MiB\n"
    assert run(capsys, tmp_path, text) == (2, "LOG:1: memory.used in [%]; expected [MiB] (or KiB, GiB)\n")


def test_trtllm_without_output_throughput(capsys, tmp_path):
    text = "TP Size:                4\nPP Size:                1\n"
    assert run(capsys, tmp_path, text) == (2, (
        "LOG: no `Total Output Throughput (tokens/sec):` line (truncated?); "
        "expected trtllm-bench's performance overview\n"))


def test_axolotl_truncated_dict(capsys, tmp_path):
    line = "{'loss': 1.5, 'tokens/train_per_sec_per_gpu': 2000.0, 'epoch': 0.1}\n"
    text = line * 4 + line[:45] + "\n"
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:5: log dict without its closing brace (truncated log?); expected `{...}`\n"))


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_nan_or_inf_throughput_is_not_a_number(capsys, tmp_path, value):
    text = "".join(TUNE.format(n=n, tps=value if n == 2 else 1000) for n in range(1, 6))
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:2: not a number in a step line; expected `tokens_per_second_per_gpu:NUMBER`\n"))


def test_serve_benchmark_with_infinite_throughput(capsys, tmp_path):
    text = '{"backend": "sglang", "output_throughput": Infinity, "total_token_throughput": 10.0}\n'
    assert run(capsys, tmp_path, text) == (2, (
        "LOG:1: no positive finite output_throughput; expected a sglang benchmark result\n"))


@pytest.mark.parametrize("value, got", [('"yes"', "'yes'"), ("1", "1"), ("maybe", "'maybe'")])
def test_pilot_illustrative_is_a_boolean_not_anything_truthy(plan_error, value, got):
    err = plan_error("workloads:\n  - {name: s, kind: finetune, method: lora, model: llama-3.1-8b, tokens: 1B,\n"
                     f"     pilot: {{log: p.txt, gpu: a100-40gb, gpus: 1, illustrative: {value}}}}}\n")
    assert (f"FILE:3: workloads[0].pilot.illustrative: not a boolean (got {got}, expected true or false)" in err
            and "Traceback" not in err)

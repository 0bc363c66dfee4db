"""roberta_cpp.runtime_info(): the same CPU, instruction set and kernel paths `roberta info` prints."""
import subprocess

import roberta_cpp
from conftest import SOURCE


def test_runtime_info_is_what_roberta_info_prints(roberta_binary):
    info = roberta_cpp.runtime_info()
    assert set(info) == {"cpu", "isa", "matrix_products", "attention", "default_dtype"}
    out = subprocess.run([roberta_binary, "info", "--model", str(SOURCE / "models" / "demo")],
                         capture_output=True, text=True, check=True).stdout
    lines = {}
    for line in out.splitlines():
        label, _, value = line.partition("  ")
        lines[label.strip()] = value.strip()
    assert info["cpu"] == lines["cpu"]
    assert info["isa"] == lines["instruction set"]
    assert info["matrix_products"] == lines["matrix products"]
    assert lines["attention"].startswith(info["attention"] + " for")
    assert lines["default dtype"].startswith(info["default_dtype"] + " for")

"""What the SASS tests of the sm_90a KV loop share: nvdisasm (or the skip
when it is missing) and the KV loop of a kernel that `attnc emit` writes,
assembled by ptxas and disassembled (bench/sass_loops.py)."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import sass_loops  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE


def find_nvdisasm():
    """nvdisasm's path, or None after printing why the test is skipped."""
    nvdisasm = sass_loops.find_nvdisasm(None, required=False)
    if not nvdisasm:
        print("skipped: nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
    return nvdisasm


def emitted_kv_loop(attnc, ptxas, nvdisasm, ptx, d, causal, extra=()):
    """The KV loop's SASS lines of the sm_90a kernel at head dim `d`, emitted
    to `ptx` with the options `extra`; exits the test when there is none."""
    cmd = [attnc, "emit", "--head-dim", str(d), "--arch", "sm_90a", "--emit", "ptx",
           "-o", ptx, *extra] + (["--causal"] if causal else [])
    subprocess.run(cmd, check=True, capture_output=True)
    body = sass_loops.kv_loop(sass_loops.disassemble(ptx, "sm_90a", nvdisasm, ptxas))
    if body is None:
        sys.exit(f"FAIL: no KV loop (HGMMA and >= 16 MUFU) in {ptx}")
    return body

# lit configuration for attnc: every .mlir / .test file under tests/lit.
import os
import lit.formats

config.name = "attnc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnc_bin_dir, "..", "tests", "lit")

# attnc's tools first, then FileCheck, not, count from llvm-22.
config.environment["PATH"] = os.pathsep.join(
    [config.attnc_bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%ptxas", config.ptxas))
# Keep the kernel cache of tests out of the user's home.
config.environment["ATTNC_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")

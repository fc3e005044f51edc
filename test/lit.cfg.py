import os
import lit.formats

config.name = "mcc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.mcc_obj_root
config.excludes = ["unit", "e2e", "errors", "Inputs", "CMakeLists.txt", "lit.cfg.py"]
path = os.pathsep.join(config.mcc_tools_dirs + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
# --target cuda builds here (CUDA toolkit found; no GPU needed).
if getattr(config, "mcc_has_cuda", False):
    config.available_features.add("cuda")
# The host computes on AMX tiles (--precision bf16x3 runs here).
try:
    with open("/proc/cpuinfo") as f:
        if " amx_bf16" in f.read():
            config.available_features.add("amx")
except OSError:
    pass
config.substitutions.append(("%models", os.path.join(config.mcc_source_dir, "models")))
config.substitutions.append(("%mcc_src", config.mcc_source_dir))
# Runs a dynamic-shape @forward against its static twins (Pipelines/Inputs).
config.substitutions.append(("%dynamic_check", "sh {0}/test/Pipelines/Inputs/dynamic_check.sh {1} {0}".format(config.mcc_source_dir, config.llvm_tools_dir)))
# MLIR's runtime support libraries, for tests that execute with mlir-runner.
config.substitutions.append(("%mlir_lib", os.path.join(config.llvm_tools_dir, "..", "lib")))

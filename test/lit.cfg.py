import os
import lit.formats

config.name = "mcc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.mcc_obj_root
config.excludes = ["unit", "e2e", "errors", "CMakeLists.txt", "lit.cfg.py"]
path = os.pathsep.join(config.mcc_tools_dirs + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
config.substitutions.append(("%models", os.path.join(config.mcc_source_dir, "models")))

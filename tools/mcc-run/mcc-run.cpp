//===- mcc-run.cpp - run a model .so with only the runtime ----------------===//

#include "mcc/Support/ModelCommands.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

static int usage() {
  std::fprintf(stderr,
               "usage: mcc-run MODEL.so --input IN(.npz|dir) --output OUT.npz "
               "[--threads N]\n"
               "       mcc-run inspect MODEL.so\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "inspect") == 0)
    return mcc::inspectModelCommand(argv[2]);
  std::string model, input, output;
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--input" || a == "--output" || a == "--threads") &&
        i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--input")
        input = v;
      else if (a == "--output")
        output = v;
      else
        threads = std::atoi(v.c_str());
    } else if (model.empty() && a[0] != '-') {
      model = a;
    } else {
      return usage();
    }
  }
  if (model.empty() || input.empty() || output.empty())
    return usage();
  return mcc::runModelCommand(model, input, output, threads);
}

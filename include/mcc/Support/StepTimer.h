//===- StepTimer.h - wall time of mcc compile's steps -----------*- C++ -*-===//
//
// `mcc compile --timing` prints where the compile time goes: the import,
// each pipeline stage, and the steps that write the library (translation to
// LLVM IR, LLVM's optimization, code generation, linking). Wall time, since
// the linker runs as another process.
//
//===----------------------------------------------------------------------===//

#ifndef MCC_SUPPORT_STEPTIMER_H
#define MCC_SUPPORT_STEPTIMER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace mcc {

class StepTimer {
public:
  using Clock = std::chrono::steady_clock;

  StepTimer() : start(Clock::now()), last(start) {}

  /// Ends the current step, naming it; the next one starts now.
  void mark(llvm::StringRef step) {
    Clock::time_point now = Clock::now();
    steps.emplace_back(step.str(),
                       std::chrono::duration<double>(now - last).count());
    last = now;
  }

  /// One line per step, then the total, in seconds.
  void print(llvm::raw_ostream &os) const {
    os << "mcc compile timing (wall seconds):\n";
    for (const auto &[name, seconds] : steps)
      os << llvm::format("  %8.3f  ", seconds) << name << "\n";
    os << llvm::format("  %8.3f  total\n",
                       std::chrono::duration<double>(last - start).count());
  }

private:
  Clock::time_point start, last;
  std::vector<std::pair<std::string, double>> steps;
};

/// Marks a step if timing was asked for.
inline void markStep(StepTimer *timer, llvm::StringRef step) {
  if (timer)
    timer->mark(step);
}

} // namespace mcc

#endif // MCC_SUPPORT_STEPTIMER_H

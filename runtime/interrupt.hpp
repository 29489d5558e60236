// SIGINT and SIGTERM during a run: the first asks the server loop to stop after its current step,
// so that the figures measured so far are written (marked interrupted); a second one ends the
// process at once, as the default action would.
#pragma once

namespace infer_plan::runtime {

// True once SIGINT or SIGTERM arrived while the InterruptGuard now alive was.
bool interrupt_requested();

// Installs the handlers for its lifetime and restores the previous ones after.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The exit status a shell gives a process ended by SIGINT: 128 + 2.
inline constexpr int kInterruptedExitCode = 130;

}  // namespace infer_plan::runtime

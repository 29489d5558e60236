#include "runtime/interrupt.hpp"

#include <atomic>
#include <csignal>

namespace infer_plan::runtime {
namespace {

std::atomic<bool> requested{false};
struct sigaction previous_int, previous_term;

extern "C" void on_interrupt(int sig) {
  if (requested.load()) {  // the second signal: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  requested.store(true);
}

}  // namespace

bool interrupt_requested() { return requested.load(std::memory_order_relaxed); }

InterruptGuard::InterruptGuard() {
  requested.store(false);
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
  requested.store(false);  // a later run in the same process starts clean
}

}  // namespace infer_plan::runtime

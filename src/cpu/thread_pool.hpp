// A process-wide pool of worker threads for the CPU backend.
//
// Persistent so that a sample call creates no threads and allocates nothing:
// workers are spawned only when a call first asks for more than exist.  Calls
// from different application threads take turns (one job at a time); each
// worker id maps to its own slice of the caller's workspace.  A job closes
// when the caller's own share is done: helpers that have not started by then
// skip it, so a helper descheduled on a busy machine never delays a call.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace tokensift::detail::cpu {

class ThreadPool {
 public:
  using JobFn = void (*)(void* context, int worker);

  static ThreadPool& instance();

  // Runs fn(context, w) for w in [0, workers), w = 0 on the calling thread, and
  // returns when all have finished.
  void run(int workers, JobFn fn, void* context);

  ~ThreadPool();

 private:
  ThreadPool() = default;
  void worker_loop(int id);
  void forget_workers_after_fork();

  std::mutex call_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> threads_;  // thread i has worker id i + 1
  uint64_t generation_ = 0;
  int active_ = 0;     // worker ids [1, active_) may take part in the current job
  bool open_ = false;  // helpers may still join the current job
  int started_ = 0;    // helpers that joined the current job
  int finished_ = 0;   // helpers that joined and are done
  JobFn fn_ = nullptr;
  void* context_ = nullptr;
  bool stop_ = false;
  int pid_ = 0;  // process that spawned threads_ (a forked child has none of them)
};

}  // namespace tokensift::detail::cpu

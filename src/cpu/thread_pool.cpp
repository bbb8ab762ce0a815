#include "cpu/thread_pool.hpp"

#include <unistd.h>

namespace tokensift::detail::cpu {

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::worker_loop(int id) {
  uint64_t seen = 0;
  for (;;) {
    JobFn fn;
    void* context;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && id < active_); });
      if (stop_) return;
      seen = generation_;
      if (!open_) continue;  // the caller already finished the work
      ++started_;
      fn = fn_;
      context = context_;
    }
    fn(context, id);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++finished_;
    }
    done_.notify_one();
  }
}

// After fork() the child owns thread objects whose threads do not exist: they
// can be neither joined nor detached, so they are leaked and fresh ones spawned.
// (Python's multiprocessing forks processes that may have sampled before.)
void ThreadPool::forget_workers_after_fork() {
  if (threads_.empty() || pid_ == (int)getpid()) return;
  new std::vector<std::thread>(std::move(threads_));  // intentionally leaked
  threads_.clear();
  generation_ = 0;
}

void ThreadPool::run(int workers, JobFn fn, void* context) {
  if (workers <= 1) {
    fn(context, 0);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    forget_workers_after_fork();
    pid_ = (int)getpid();
    // Growth happens only when a call first wants more threads than exist.
    while ((int)threads_.size() < workers - 1) {
      const int id = (int)threads_.size() + 1;
      threads_.emplace_back([this, id] { worker_loop(id); });
    }
    fn_ = fn;
    context_ = context;
    active_ = workers;
    open_ = true;
    started_ = 0;
    finished_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  fn(context, 0);
  // The job function hands out work until none is left, so once the caller's
  // share returns nothing remains for helpers that have not joined yet.
  std::unique_lock<std::mutex> lock(mutex_);
  open_ = false;
  done_.wait(lock, [&] { return finished_ == started_; });
}

}  // namespace tokensift::detail::cpu

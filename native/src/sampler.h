// The sampling engine, free of N-API: a std::thread reads RSS (and GPU memory through NVML) at a
// steady rate and appends to a column-major block of doubles. A block's samples [0, count) never
// change once published, so JS may view them in place while the thread writes beyond count; when a
// block fills, the thread copies into one twice as large and publishes that instead (old views stay
// valid: each block is reference-counted).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <sys/types.h>

#include "nvml.h"
#include "procfs.h"

namespace memhint {

enum Column { kTimeMs = 0, kRssBytes = 1, kGpuUsedBytes = 2, kGpuProcessBytes = 3, kColumns = 4 };

struct Block {
  explicit Block(size_t cap) : capacity(cap), data(new double[cap * kColumns]) {}
  double* column(int c) { return data.get() + static_cast<size_t>(c) * capacity; }
  const size_t capacity;
  std::unique_ptr<double[]> data;
};

struct SamplerOptions {
  double interval_ms = 10;
  bool gpu = true;
  double gpu_interval_ms = 0;  // 0: same as interval_ms
  int gpu_index = -1;          // -1: the first device the process shows up on, else device 0
  std::string nvml_library;    // empty: libnvidia-ml.so.1
  size_t initial_capacity = 0; // 0: about a minute of samples
  size_t max_samples = 1u << 22;
};

struct GpuStatus {
  bool available = false;
  std::string reason;
  std::string device;
  int index = -1;
  double total_bytes = 0;
  bool process_seen = false;
};

struct Snapshot {
  std::shared_ptr<Block> block;
  size_t count = 0;
  bool running = false;
  bool exited = false;
  bool truncated = false;
  std::string end_reason;
  double ended_at_ms = -1;
  GpuStatus gpu;
  unsigned long long late_ticks = 0;
};

// Benchmark baseline: CPU a thread spends only waking on the sampler's deadline schedule, no work.
struct WakeCost {
  unsigned long long wakes = 0;
  double cpu_ms = 0;
  double wall_ms = 0;
};
WakeCost MeasureWakeCost(double duration_ms, double interval_ms);

class Sampler {
 public:
  Sampler() = default;
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Validates the pid (its statm must be readable and it must have an address space), opens NVML if
  // asked, takes the first sample synchronously and starts the thread. Returns "" or an error sentence.
  std::string Start(pid_t pid, const SamplerOptions& options);
  // Stops and joins the thread (idempotent at this level; the binding turns a second stop into an error).
  void Stop();
  Snapshot Read();
  // CPU time the sampling thread has used, in ms (the thread's own clock).
  double ThreadCpuMs();
  double started_at_epoch_ms() const { return started_at_epoch_ms_; }
  pid_t pid() const { return pid_; }
  const SamplerOptions& options() const { return options_; }

 private:
  void Run();
  // Takes one sample; false when the series has ended (process gone, read error, or sample limit).
  bool SampleOnce();
  bool Append(double t_ms, double rss, double gpu_used, double gpu_process);
  void End(bool exited, const std::string& reason, double t_ms);
  double NowMs() const;

  pid_t pid_ = 0;
  SamplerOptions options_;
  StatmReader statm_;
  NvmlSession nvml_;
  unsigned gpu_tracked_ = 0;
  bool gpu_tracked_fixed_ = false;
  double gpu_last_used_ = 0, gpu_last_process_ = 0;
  double gpu_next_ms_ = 0;

  std::chrono::steady_clock::time_point t0_;
  double started_at_epoch_ms_ = 0;
  std::thread thread_;
  clockid_t thread_clock_{};
  bool have_thread_clock_ = false;
  std::atomic<double> final_cpu_ms_{-1};

  std::mutex mu_;  // guards everything below, and the publication of samples
  std::condition_variable wake_;
  bool stop_requested_ = false;
  bool running_ = false;
  std::shared_ptr<Block> block_;
  size_t count_ = 0;
  bool exited_ = false;
  bool truncated_ = false;
  std::string end_reason_;
  double ended_at_ms_ = -1;
  GpuStatus gpu_;
  unsigned long long late_ticks_ = 0;
};

}  // namespace memhint

#include "sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <limits>
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

namespace memhint {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ThreadCpuMsOfCaller() {
  struct rusage ru {};
  if (::getrusage(RUSAGE_THREAD, &ru) != 0) return -1;
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}
}  // namespace

Sampler::~Sampler() { Stop(); }

WakeCost MeasureWakeCost(double duration_ms, double interval_ms) {
  WakeCost result;
  std::thread t([&] {
    using clock = std::chrono::steady_clock;
    const auto interval = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double, std::milli>(interval_ms));
    const auto t0 = clock::now();
    const auto end = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double, std::milli>(duration_ms));
    std::mutex mu;
    std::condition_variable cv;
    std::unique_lock<std::mutex> lock(mu);
    const double cpu0 = ThreadCpuMsOfCaller();
    for (auto next = t0 + interval; next < end; next += interval) {
      cv.wait_until(lock, next, [] { return false; });
      ++result.wakes;
    }
    result.cpu_ms = ThreadCpuMsOfCaller() - cpu0;
    result.wall_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  });
  t.join();
  return result;
}

double Sampler::NowMs() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count();
}

std::string Sampler::Start(pid_t pid, const SamplerOptions& options) {
  options_ = options;
  pid_ = pid;
  std::string error;
  if (!statm_.Open(pid, &error)) return error;
  double rss = 0;
  std::string detail;
  switch (statm_.ReadRss(&rss, &detail)) {
    case StatmReader::Result::kOk: break;
    case StatmReader::Result::kGone:
      return "pid " + std::to_string(pid) + " has no user address space (kernel thread, or it has exited)";
    case StatmReader::Result::kError: return "pid " + std::to_string(pid) + ": " + detail;
  }

  if (options_.gpu) {
    std::string reason;
    if (nvml_.Open(options_.nvml_library, &reason)) {
      if (options_.gpu_index >= 0 && static_cast<unsigned>(options_.gpu_index) >= nvml_.device_count()) {
        gpu_.reason = "gpuIndex " + std::to_string(options_.gpu_index) + " out of range: NVML sees " +
                      std::to_string(nvml_.device_count()) + " device(s)";
        nvml_.Close();
      } else {
        gpu_.available = true;
        gpu_tracked_fixed_ = options_.gpu_index >= 0;
        gpu_tracked_ = gpu_tracked_fixed_ ? static_cast<unsigned>(options_.gpu_index) : 0;
      }
    } else {
      gpu_.reason = reason;
    }
  } else {
    gpu_.reason = "GPU sampling disabled by the caller";
  }
  if (gpu_.available) {
    gpu_.index = static_cast<int>(gpu_tracked_);
    gpu_.device = nvml_.DeviceName(gpu_tracked_);
  }

  const double interval = options_.interval_ms;
  size_t cap = options_.initial_capacity;
  if (cap == 0) cap = static_cast<size_t>(std::clamp(60000.0 / interval, 1024.0, 65536.0));
  cap = std::min(std::max<size_t>(cap, 16), options_.max_samples);
  block_ = std::make_shared<Block>(cap);

  t0_ = std::chrono::steady_clock::now();
  started_at_epoch_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
  running_ = true;
  if (!SampleOnce()) return "";  // ended on the very first sample; Read() reports why
  thread_ = std::thread([this] { Run(); });
  have_thread_clock_ = ::pthread_getcpuclockid(thread_.native_handle(), &thread_clock_) == 0;
  return "";
}

// Only one thread appends at a time (Start's first sample, then the sampling thread), so the writer
// may touch block_ and count_ without the lock; the lock orders publication for Read().
bool Sampler::Append(double t_ms, double rss, double gpu_used, double gpu_process) {
  if (count_ == block_->capacity) {
    if (count_ >= options_.max_samples) {
      std::lock_guard<std::mutex> lock(mu_);
      truncated_ = true;
      running_ = false;
      end_reason_ = "sample limit reached (" + std::to_string(options_.max_samples) + " samples)";
      ended_at_ms_ = t_ms;
      return false;
    }
    // Grow beside the old block (which stays intact for views still holding it), copying outside the
    // lock: samples below count_ never change, so Read() can go on using the old block meanwhile.
    std::shared_ptr<Block> bigger;
    try {
      bigger = std::make_shared<Block>(std::min(block_->capacity * 2, options_.max_samples));
    } catch (const std::bad_alloc&) {
      // On the sampling thread an uncaught exception is std::terminate: end the series instead.
      std::lock_guard<std::mutex> lock(mu_);
      truncated_ = true;
      running_ = false;
      end_reason_ = "out of memory growing the sample buffer past " + std::to_string(count_) + " samples";
      ended_at_ms_ = t_ms;
      return false;
    }
    for (int c = 0; c < kColumns; ++c)
      std::memcpy(bigger->column(c), block_->column(c), count_ * sizeof(double));
    std::lock_guard<std::mutex> lock(mu_);
    block_ = std::move(bigger);
  }
  // Index count_ is not yet visible to readers, so it is written unlocked; the locked increment publishes it.
  block_->column(kTimeMs)[count_] = t_ms;
  block_->column(kRssBytes)[count_] = rss;
  block_->column(kGpuUsedBytes)[count_] = gpu_used;
  block_->column(kGpuProcessBytes)[count_] = gpu_process;
  std::lock_guard<std::mutex> lock(mu_);
  ++count_;
  return true;
}

void Sampler::End(bool exited, const std::string& reason, double t_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  exited_ = exited;
  running_ = false;
  end_reason_ = reason;
  ended_at_ms_ = t_ms;
}

bool Sampler::SampleOnce() {
  double t = NowMs();
  double rss = 0;
  std::string detail;
  switch (statm_.ReadRss(&rss, &detail)) {
    case StatmReader::Result::kOk: break;
    case StatmReader::Result::kGone: End(true, detail, t); return false;
    case StatmReader::Result::kError: End(false, detail, t); return false;
  }
  double gpu_used = kNaN, gpu_process = kNaN;
  if (gpu_.available) {
    const double gpu_interval = options_.gpu_interval_ms > 0 ? options_.gpu_interval_ms : options_.interval_ms;
    if (t >= gpu_next_ms_) {
      // Absolute GPU schedule (multiples of gpu_interval from t0), like the ticks: measuring from the
      // actual, slightly late wake-up time would skip every other tick when both intervals are equal.
      do gpu_next_ms_ += gpu_interval;
      while (gpu_next_ms_ <= t);
      GpuReading g = nvml_.Read(gpu_tracked_, pid_);
      if (g.ok) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!gpu_tracked_fixed_ && g.process_seen) {
          // Follow the device the process actually allocates on, once it has a context there.
          gpu_tracked_fixed_ = true;
          if (static_cast<unsigned>(g.process_device) != gpu_tracked_) {
            gpu_tracked_ = static_cast<unsigned>(g.process_device);
            gpu_.index = g.process_device;
            gpu_.device = nvml_.DeviceName(gpu_tracked_);
            g = nvml_.Read(gpu_tracked_, pid_);
          }
        }
        gpu_.total_bytes = g.total_bytes;
        gpu_.process_seen = gpu_.process_seen || g.process_seen;
        gpu_last_used_ = g.used_bytes;
        gpu_last_process_ = g.process_bytes;
      } else {
        gpu_last_used_ = kNaN;
        gpu_last_process_ = kNaN;
      }
    }
    // Between GPU reads the last reading holds (NVML queries cost more than a procfs read).
    gpu_used = gpu_last_used_;
    gpu_process = gpu_last_process_;
  }
  return Append(t, rss, gpu_used, gpu_process);
}

void Sampler::Run() {
  using clock = std::chrono::steady_clock;
  const auto interval = std::chrono::duration_cast<clock::duration>(
      std::chrono::duration<double, std::milli>(options_.interval_ms));
  auto next = t0_ + interval;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_requested_) {
    // Absolute deadlines keep the rate steady: the time a sample takes does not push the next one.
    if (wake_.wait_until(lock, next, [this] { return stop_requested_; })) break;
    lock.unlock();
    bool more = SampleOnce();
    lock.lock();
    if (!more) break;
    next += interval;
    auto now = clock::now();
    if (next <= now) {
      // Fell behind (machine busy): skip the missed ticks rather than firing a burst.
      auto missed = (now - next) / interval + 1;
      late_ticks_ += static_cast<unsigned long long>(missed);
      next += missed * interval;
    }
  }
  running_ = false;
  lock.unlock();
  final_cpu_ms_.store(ThreadCpuMsOfCaller());
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
    if (running_ && end_reason_.empty()) {
      end_reason_ = "stopped";
      ended_at_ms_ = NowMs();
    }
    running_ = false;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  nvml_.Close();
  statm_.Close();
}

double Sampler::ThreadCpuMs() {
  double final_ms = final_cpu_ms_.load();
  if (final_ms >= 0) return final_ms;
  if (!have_thread_clock_) return 0;
  struct timespec ts {};
  if (::clock_gettime(thread_clock_, &ts) != 0) {
    // The thread finished between the two loads; its final figure is stored by now or very soon.
    final_ms = final_cpu_ms_.load();
    return final_ms >= 0 ? final_ms : 0;
  }
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

Snapshot Sampler::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot s;
  s.block = block_;
  s.count = count_;
  s.running = running_;
  s.exited = exited_;
  s.truncated = truncated_;
  s.end_reason = end_reason_;
  s.ended_at_ms = ended_at_ms_;
  s.gpu = gpu_;
  s.late_ticks = late_ticks_;
  return s;
}

}  // namespace memhint

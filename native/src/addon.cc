// N-API binding for the sampler. read() hands JS one ArrayBuffer over the native block (external,
// no copy) plus the sample count; JS builds Float64Array views over it. Runtimes that forbid
// external buffers (Electron's V8 memory cage) get one whole-block copy per read instead.
#include <napi.h>

#include <cmath>
#include <cstdio>
#include <new>
#include <memory>
#include <string>

#include "nvml.h"
#include "sampler.h"

namespace {

using memhint::Block;
using memhint::kColumns;

constexpr double kMinIntervalMs = 1;
constexpr double kMaxIntervalMs = 60000;
// Sample-buffer bounds: 16M samples are 512 MiB of doubles, far beyond any profile (4M at 1 ms is 70 min).
constexpr double kMinSamples = 16;
constexpr double kMaxSamples = 1 << 24;

// A number option, checked before any cast: NaN, infinities, fractions and out-of-range values would be
// undefined behaviour in static_cast or an allocation the process cannot survive (std::terminate).
double CheckedNumber(Napi::Env env, const Napi::Object& o, const char* name, double lo, double hi, bool integer) {
  double v = o.Get(name).As<Napi::Number>().DoubleValue();
  if (!std::isfinite(v) || v < lo || v > hi || (integer && v != std::floor(v))) {
    char range[96];
    std::snprintf(range, sizeof range, "%s between %.0f and %.0f", integer ? "an integer" : "a number", lo, hi);
    throw Napi::RangeError::New(env, std::string(name) + " must be " + range + ", got " + o.Get(name).ToString().Utf8Value());
  }
  return v;
}

class SamplerWrap : public Napi::ObjectWrap<SamplerWrap> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeSampler",
                       {InstanceMethod("start", &SamplerWrap::Start), InstanceMethod("read", &SamplerWrap::Read),
                        InstanceMethod("stop", &SamplerWrap::Stop)});
  }

  explicit SamplerWrap(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SamplerWrap>(info) {
    if (info.Length() > 0 && info[0].IsObject()) {
      Napi::Object o = info[0].As<Napi::Object>();
      if (o.Get("zeroCopy").IsBoolean()) zero_copy_ = o.Get("zeroCopy").As<Napi::Boolean>().Value();
    }
  }

 private:
  enum class State { kIdle, kRunning, kStopped };

  Napi::Value Start(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (state_ == State::kRunning) throw Napi::Error::New(env, "sampler already started (pid " + std::to_string(sampler_.pid()) + ")");
    if (state_ == State::kStopped) throw Napi::Error::New(env, "sampler already stopped; create a new sampler for another series");
    if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
      throw Napi::TypeError::New(env, "start(pid, intervalMs[, options]) expects two numbers");
    double pid = info[0].As<Napi::Number>().DoubleValue();
    if (!std::isfinite(pid) || pid != std::floor(pid) || pid < 1 || pid > 4194304)
      throw Napi::RangeError::New(env, "invalid pid " + info[0].ToString().Utf8Value() + ": expected a positive integer");
    double interval = info[1].As<Napi::Number>().DoubleValue();
    if (!(interval >= kMinIntervalMs && interval <= kMaxIntervalMs))
      throw Napi::RangeError::New(env, "intervalMs must be between 1 and 60000, got " + info[1].ToString().Utf8Value());

    memhint::SamplerOptions opts;
    opts.interval_ms = interval;
    if (info.Length() > 2 && info[2].IsObject()) {
      Napi::Object o = info[2].As<Napi::Object>();
      if (o.Get("gpu").IsBoolean()) opts.gpu = o.Get("gpu").As<Napi::Boolean>().Value();
      if (o.Get("gpuIntervalMs").IsNumber()) opts.gpu_interval_ms = CheckedNumber(env, o, "gpuIntervalMs", 0, kMaxIntervalMs, false);
      if (o.Get("gpuIndex").IsNumber()) opts.gpu_index = static_cast<int>(CheckedNumber(env, o, "gpuIndex", -1, 65535, true));
      if (o.Get("nvmlLibrary").IsString()) opts.nvml_library = o.Get("nvmlLibrary").As<Napi::String>().Utf8Value();
      if (o.Get("initialCapacity").IsNumber())
        opts.initial_capacity = static_cast<size_t>(CheckedNumber(env, o, "initialCapacity", 0, kMaxSamples, true));
      if (o.Get("maxSamples").IsNumber())
        opts.max_samples = static_cast<size_t>(CheckedNumber(env, o, "maxSamples", kMinSamples, kMaxSamples, true));
    }
    std::string error;
    try {
      error = sampler_.Start(static_cast<pid_t>(pid), opts);
    } catch (const std::bad_alloc&) {
      throw Napi::RangeError::New(env, "cannot allocate the sample buffer (initialCapacity " + std::to_string(opts.initial_capacity) + ")");
    }
    if (!error.empty()) throw Napi::Error::New(env, error);
    state_ = State::kRunning;
    return env.Undefined();
  }

  Napi::Value Read(const Napi::CallbackInfo& info) {
    if (state_ == State::kIdle) throw Napi::Error::New(info.Env(), "sampler not started");
    return Snapshot(info.Env());
  }

  Napi::Value Stop(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (state_ == State::kIdle) throw Napi::Error::New(env, "sampler not started");
    if (state_ == State::kStopped) throw Napi::Error::New(env, "sampler already stopped");
    sampler_.Stop();
    state_ = State::kStopped;
    return Snapshot(env);
  }

  // One ArrayBuffer per block (V8 must not see two ArrayBuffers over the same memory).
  Napi::Value BufferFor(Napi::Env env, const std::shared_ptr<Block>& block, size_t count, size_t* stride) {
    if (zero_copy_) {
      if (cached_block_ == block.get() && !cached_buffer_.IsEmpty()) {
        *stride = block->capacity;
        return cached_buffer_.Value();
      }
      auto* keep = new std::shared_ptr<Block>(block);
      napi_value ab;
      napi_status status = napi_create_external_arraybuffer(
          env, block->data.get(), block->capacity * kColumns * sizeof(double),
          [](napi_env, void*, void* hint) { delete static_cast<std::shared_ptr<Block>*>(hint); }, keep, &ab);
      if (status == napi_ok) {
        cached_block_ = block.get();
        cached_buffer_ = Napi::Persistent(Napi::ArrayBuffer(env, ab));
        *stride = block->capacity;
        return Napi::Value(env, ab);
      }
      delete keep;
      bool pending = false;
      if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored);
      }
      zero_copy_ = false;  // This runtime forbids external buffers: copy from now on.
    }
    Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, std::max<size_t>(count, 1) * kColumns * sizeof(double));
    double* out = static_cast<double*>(ab.Data());
    const size_t n = std::max<size_t>(count, 1);
    for (int c = 0; c < kColumns; ++c) std::copy(block->column(c), block->column(c) + count, out + c * n);
    *stride = n;
    return ab;
  }

  Napi::Object Snapshot(Napi::Env env) {
    memhint::Snapshot s = sampler_.Read();
    size_t stride = 0;
    Napi::Object o = Napi::Object::New(env);
    o.Set("buffer", BufferFor(env, s.block, s.count, &stride));
    o.Set("stride", static_cast<double>(stride));
    o.Set("count", static_cast<double>(s.count));
    o.Set("zeroCopy", zero_copy_);
    o.Set("pid", static_cast<double>(sampler_.pid()));
    o.Set("intervalMs", sampler_.options().interval_ms);
    o.Set("running", s.running);
    o.Set("exited", s.exited);
    o.Set("truncated", s.truncated);
    if (!s.end_reason.empty()) o.Set("endReason", s.end_reason);
    if (s.ended_at_ms >= 0) o.Set("endedAtMs", s.ended_at_ms);
    o.Set("startedAtEpochMs", sampler_.started_at_epoch_ms());
    o.Set("lateTicks", static_cast<double>(s.late_ticks));
    o.Set("threadCpuMs", sampler_.ThreadCpuMs());
    Napi::Object gpu = Napi::Object::New(env);
    gpu.Set("available", s.gpu.available);
    if (!s.gpu.reason.empty()) gpu.Set("reason", s.gpu.reason);
    if (!s.gpu.device.empty()) gpu.Set("device", s.gpu.device);
    if (s.gpu.index >= 0) gpu.Set("index", s.gpu.index);
    gpu.Set("processSeen", s.gpu.process_seen);
    o.Set("gpu", gpu);
    o.Set("gpuTotalBytes", s.gpu.available && s.gpu.total_bytes > 0 ? Napi::Value(Napi::Number::New(env, s.gpu.total_bytes))
                                                                       : env.Null());
    return o;
  }

  memhint::Sampler sampler_;
  State state_ = State::kIdle;
  bool zero_copy_ = true;
  const Block* cached_block_ = nullptr;
  Napi::Reference<Napi::ArrayBuffer> cached_buffer_;
};

// probeGpu([nvmlLibrary]): what NVML sees, without starting a series. Never throws for a missing driver.
Napi::Value ProbeGpu(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string library = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "";
  memhint::NvmlSession nvml;
  std::string reason;
  Napi::Object o = Napi::Object::New(env);
  Napi::Array devices = Napi::Array::New(env);
  if (!nvml.Open(library, &reason)) {
    o.Set("available", false);
    o.Set("reason", reason);
    o.Set("devices", devices);
    return o;
  }
  std::string error;
  auto list = nvml.Devices(&error);
  for (size_t i = 0; i < list.size(); ++i) {
    Napi::Object d = Napi::Object::New(env);
    d.Set("index", list[i].index);
    d.Set("name", list[i].name);
    d.Set("totalBytes", list[i].total_bytes);
    d.Set("usedBytes", list[i].used_bytes);
    devices.Set(static_cast<uint32_t>(i), d);
  }
  o.Set("available", true);
  if (!error.empty()) o.Set("reason", error);
  o.Set("devices", devices);
  return o;
}

// measureWakeCost(durationMs, intervalMs): benchmark baseline; blocks the caller for durationMs.
Napi::Value MeasureWakeCost(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsNumber() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "measureWakeCost(durationMs, intervalMs) expects two numbers");
  double duration = info[0].As<Napi::Number>().DoubleValue();
  double interval = info[1].As<Napi::Number>().DoubleValue();
  if (!(duration > 0 && duration <= 600000) || !(interval >= kMinIntervalMs && interval <= kMaxIntervalMs))
    throw Napi::RangeError::New(env, "measureWakeCost: durationMs in (0, 600000], intervalMs in [1, 60000]");
  memhint::WakeCost cost = memhint::MeasureWakeCost(duration, interval);
  Napi::Object o = Napi::Object::New(env);
  o.Set("wakes", static_cast<double>(cost.wakes));
  o.Set("cpuMs", cost.cpu_ms);
  o.Set("wallMs", cost.wall_ms);
  return o;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("measureWakeCost", Napi::Function::New(env, MeasureWakeCost));
  exports.Set("NativeSampler", SamplerWrap::Define(env));
  exports.Set("probeGpu", Napi::Function::New(env, ProbeGpu));
  exports.Set("napiVersion", NAPI_VERSION);
  exports.Set("columns", Napi::Number::New(env, kColumns));
  return exports;
}

}  // namespace

NODE_API_MODULE(memhint_sampler, Init)

#include "nvml.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

namespace memhint {
namespace nvml_detail {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// Layout accepted by nvmlDeviceGetComputeRunningProcesses (v1).
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
// Layout accepted by the _v2 and _v3 entry points (nvml.h names it nvmlProcessInfo_v2_t / nvmlProcessInfo_t).
struct nvmlProcessInfo_v2_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using CountFn = nvmlReturn_t (*)(unsigned int*);
using HandleFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using MemoryFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using NameFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using ProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, void*);

struct Api {
  void* lib = nullptr;
  std::string library;
  InitFn init = nullptr;
  ShutdownFn shutdown = nullptr;
  ErrorStringFn error_string = nullptr;
  CountFn device_count = nullptr;
  HandleFn handle_by_index = nullptr;
  MemoryFn memory_info = nullptr;
  NameFn name = nullptr;
  ProcessesFn processes = nullptr;
  size_t process_stride = 0;
};

std::mutex g_api_mutex;
// One entry per library path. Libraries stay loaded once opened: unloading NVML while another
// session may still call into it is unsafe, and the handful of paths is bounded.
std::map<std::string, std::unique_ptr<Api>> g_apis;

std::string ErrorText(const Api& api, nvmlReturn_t code) {
  const char* text = api.error_string ? api.error_string(code) : nullptr;
  return (text ? std::string(text) : std::string("NVML error")) + " (code " + std::to_string(code) + ")";
}

template <typename Fn>
bool Resolve(void* lib, const char* symbol, Fn* out) {
  *out = reinterpret_cast<Fn>(::dlsym(lib, symbol));
  return *out != nullptr;
}

// Loads the library and resolves symbols once per process and library path.
const Api* LoadApi(const std::string& library, std::string* reason) {
  std::lock_guard<std::mutex> lock(g_api_mutex);
  auto it = g_apis.find(library);
  if (it != g_apis.end()) return it->second.get();
  ::dlerror();
  void* lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    *reason = "NVML library not loadable (no NVIDIA driver?): " + std::string(err ? err : library);
    return nullptr;
  }
  Api api;
  api.lib = lib;
  api.library = library;
  const char* missing = nullptr;
  if (!Resolve(lib, "nvmlInit_v2", &api.init)) missing = "nvmlInit_v2";
  else if (!Resolve(lib, "nvmlShutdown", &api.shutdown)) missing = "nvmlShutdown";
  else if (!Resolve(lib, "nvmlDeviceGetCount_v2", &api.device_count)) missing = "nvmlDeviceGetCount_v2";
  else if (!Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &api.handle_by_index)) missing = "nvmlDeviceGetHandleByIndex_v2";
  else if (!Resolve(lib, "nvmlDeviceGetMemoryInfo", &api.memory_info)) missing = "nvmlDeviceGetMemoryInfo";
  else if (!Resolve(lib, "nvmlDeviceGetName", &api.name)) missing = "nvmlDeviceGetName";
  if (missing) {
    *reason = std::string(library) + " lacks " + missing + " (not NVML, or a driver too old)";
    ::dlclose(lib);
    return nullptr;
  }
  Resolve(lib, "nvmlErrorString", &api.error_string);
  // Newest process-list entry point first; v3 and v2 take the 4-field struct, v1 the 2-field one.
  if (Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v3", &api.processes) ||
      Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &api.processes)) {
    api.process_stride = sizeof(nvmlProcessInfo_v2_t);
  } else if (Resolve(lib, "nvmlDeviceGetComputeRunningProcesses", &api.processes)) {
    api.process_stride = sizeof(nvmlProcessInfo_v1_t);
  }
  auto& slot = g_apis[library];
  slot = std::make_unique<Api>(api);
  return slot.get();
}

}  // namespace nvml_detail
using namespace nvml_detail;

NvmlSession::~NvmlSession() { Close(); }

bool NvmlSession::Open(const std::string& library, std::string* reason) {
  Close();
  std::string lib = library.empty() ? "libnvidia-ml.so.1" : library;
  api_ = LoadApi(lib, reason);
  if (!api_) return false;
  const Api& g_api = *api_;
  nvmlReturn_t rc = g_api.init();
  if (rc != NVML_SUCCESS) {
    *reason = "nvmlInit_v2 failed: " + ErrorText(g_api, rc);
    return false;
  }
  open_ = true;
  unsigned count = 0;
  rc = g_api.device_count(&count);
  if (rc != NVML_SUCCESS) {
    *reason = "nvmlDeviceGetCount_v2 failed: " + ErrorText(g_api, rc);
    Close();
    return false;
  }
  if (count == 0) {
    *reason = "NVML reports no GPU devices";
    Close();
    return false;
  }
  handles_.assign(count, nullptr);
  for (unsigned i = 0; i < count; ++i) {
    rc = g_api.handle_by_index(i, &handles_[i]);
    if (rc != NVML_SUCCESS) {
      *reason = "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(i) + ") failed: " + ErrorText(g_api, rc);
      Close();
      return false;
    }
  }
  device_count_ = count;
  proc_buf_.assign(64 * (g_api.process_stride ? g_api.process_stride : 1), 0);
  return true;
}

void NvmlSession::Close() {
  if (open_) api_->shutdown();
  open_ = false;
  device_count_ = 0;
  handles_.clear();
}

std::string NvmlSession::DeviceName(unsigned index) {
  if (index >= device_count_) return "";
  char name[128] = {0};
  if (api_->name(handles_[index], name, sizeof name) != NVML_SUCCESS) return "";
  return name;
}

std::vector<GpuDeviceInfo> NvmlSession::Devices(std::string* error) {
  std::vector<GpuDeviceInfo> out;
  if (!open_) return out;
  const Api& g_api = *api_;
  for (unsigned i = 0; i < device_count_; ++i) {
    GpuDeviceInfo info;
    info.index = i;
    info.name = DeviceName(i);
    nvmlMemory_t mem{};
    nvmlReturn_t rc = g_api.memory_info(handles_[i], &mem);
    if (rc != NVML_SUCCESS) {
      *error = "nvmlDeviceGetMemoryInfo(" + std::to_string(i) + ") failed: " + ErrorText(g_api, rc);
    } else {
      info.total_bytes = static_cast<double>(mem.total);
      info.used_bytes = static_cast<double>(mem.used);
    }
    out.push_back(info);
  }
  return out;
}

GpuReading NvmlSession::Read(unsigned tracked, pid_t pid) {
  GpuReading r;
  if (!open_ || tracked >= device_count_) {
    r.error = "NVML session not open";
    return r;
  }
  const Api& g_api = *api_;
  nvmlMemory_t mem{};
  nvmlReturn_t rc = g_api.memory_info(handles_[tracked], &mem);
  if (rc != NVML_SUCCESS) {
    r.error = "nvmlDeviceGetMemoryInfo failed: " + ErrorText(g_api, rc);
    return r;
  }
  r.used_bytes = static_cast<double>(mem.used);
  r.total_bytes = static_cast<double>(mem.total);
  r.ok = true;
  if (!g_api.processes) {
    r.process_bytes = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const size_t stride = g_api.process_stride;
  bool withheld = false;
  for (unsigned d = 0; d < device_count_; ++d) {
    unsigned count = static_cast<unsigned>(proc_buf_.size() / stride);
    rc = g_api.processes(handles_[d], &count, proc_buf_.data());
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
      proc_buf_.assign((count + 16) * stride, 0);
      count = static_cast<unsigned>(proc_buf_.size() / stride);
      rc = g_api.processes(handles_[d], &count, proc_buf_.data());
    }
    if (rc != NVML_SUCCESS) continue;
    for (unsigned i = 0; i < count; ++i) {
      const unsigned char* entry = proc_buf_.data() + i * stride;
      unsigned int entry_pid;
      unsigned long long used;
      // pid and usedGpuMemory sit at the same offsets in both layouts.
      std::memcpy(&entry_pid, entry + offsetof(nvmlProcessInfo_v1_t, pid), sizeof entry_pid);
      std::memcpy(&used, entry + offsetof(nvmlProcessInfo_v1_t, usedGpuMemory), sizeof used);
      if (static_cast<pid_t>(entry_pid) != pid) continue;
      if (!r.process_seen) r.process_device = static_cast<int>(d);
      r.process_seen = true;
      if (used == NVML_VALUE_NOT_AVAILABLE) withheld = true;
      else r.process_bytes += static_cast<double>(used);
    }
  }
  if (withheld && r.process_bytes == 0) r.process_bytes = std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace memhint

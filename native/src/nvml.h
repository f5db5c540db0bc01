// NVML opened at run time with dlopen: no CUDA SDK or driver is needed to build, and a machine without
// a driver gets a reason instead of a load failure. Only the handful of entry points we call are
// declared here, with the struct layouts from nvml.h.
#pragma once
#include <string>
#include <vector>
#include <sys/types.h>

namespace memhint {

namespace nvml_detail {
struct Api;
}

struct GpuDeviceInfo {
  unsigned index = 0;
  std::string name;
  double total_bytes = 0;
  double used_bytes = 0;
};

struct GpuReading {
  bool ok = false;
  double used_bytes = 0;     // tracked device: memory in use by everyone
  double total_bytes = 0;    // tracked device: capacity
  double process_bytes = 0;  // this pid's memory summed over all devices; NaN if NVML withholds it
  bool process_seen = false; // the pid appeared in some device's compute process list
  int process_device = -1;   // first device where the pid was seen
  std::string error;
};

// One NVML session (nvmlInit_v2 .. nvmlShutdown). NVML reference-counts init, so several sessions coexist.
class NvmlSession {
 public:
  NvmlSession() = default;
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  // library: path or soname to dlopen (empty = "libnvidia-ml.so.1"). On failure *reason explains why.
  bool Open(const std::string& library, std::string* reason);
  bool is_open() const { return open_; }
  unsigned device_count() const { return device_count_; }
  std::vector<GpuDeviceInfo> Devices(std::string* error);
  std::string DeviceName(unsigned index);
  // Reads device `tracked` used/total and the pid's own use on every device.
  GpuReading Read(unsigned tracked, pid_t pid);
  void Close();

 private:
  const nvml_detail::Api* api_ = nullptr;
  bool open_ = false;
  unsigned device_count_ = 0;
  std::vector<void*> handles_;
  std::vector<unsigned char> proc_buf_;
};

}  // namespace memhint

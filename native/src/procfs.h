// Reads a process's resident set size from /proc/<pid>/statm through a descriptor kept open for the
// whole series: one pread per sample, and the descriptor stays bound to the original task, so a
// recycled pid cannot be mistaken for the process we started with.
#pragma once
#include <string>
#include <sys/types.h>

namespace memhint {

class StatmReader {
 public:
  StatmReader() = default;
  ~StatmReader();
  StatmReader(const StatmReader&) = delete;
  StatmReader& operator=(const StatmReader&) = delete;

  // Opens /proc/<pid>/statm. On failure returns false and sets *error to a sentence naming the cause.
  bool Open(pid_t pid, std::string* error);

  enum class Result { kOk, kGone, kError };
  // Reads resident bytes. kGone: the process has exited (read fails with ESRCH, or it is a zombie
  // whose memory map is already released and reports 0 pages).
  Result ReadRss(double* rss_bytes, std::string* detail);

  void Close();

 private:
  int fd_ = -1;
  long page_size_ = 4096;
};

}  // namespace memhint

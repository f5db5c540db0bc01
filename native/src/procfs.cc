#include "procfs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace memhint {

StatmReader::~StatmReader() { Close(); }

void StatmReader::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool StatmReader::Open(pid_t pid, std::string* error) {
  Close();
  page_size_ = ::sysconf(_SC_PAGESIZE);
  if (page_size_ <= 0) page_size_ = 4096;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  fd_ = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    int err = errno;
    *error = err == ENOENT ? "no process with pid " + std::to_string(pid)
                           : std::string("cannot open ") + path + ": " + std::strerror(err);
    return false;
  }
  return true;
}

StatmReader::Result StatmReader::ReadRss(double* rss_bytes, std::string* detail) {
  char buf[256];
  ssize_t n;
  do {
    n = ::pread(fd_, buf, sizeof buf - 1, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    int err = errno;
    if (err == ESRCH) {
      *detail = "process exited";
      return Result::kGone;
    }
    *detail = std::string("reading statm failed: ") + std::strerror(err);
    return Result::kError;
  }
  if (n == 0) {
    *detail = "process exited";
    return Result::kGone;
  }
  buf[n] = '\0';
  char* end = nullptr;
  unsigned long long size_pages = std::strtoull(buf, &end, 10);
  unsigned long long resident_pages = std::strtoull(end, nullptr, 10);
  if (size_pages == 0 && resident_pages == 0) {
    // A zombie (exited, not yet reaped) keeps its /proc entry but has no address space.
    *detail = "process exited (zombie)";
    return Result::kGone;
  }
  *rss_bytes = static_cast<double>(resident_pages) * static_cast<double>(page_size_);
  return Result::kOk;
}

}  // namespace memhint

// The implementation under test as a child process: `/bin/sh -c COMMAND` with pipes, one request line in,
// one response line out, every wait bounded by a timeout.
#pragma once

#include <string>
#include <sys/types.h>

#include "audit/conform/protocol.h"

namespace kvaudit::conform {

// Kills (SIGKILL) the process group of every implementation running now. Async-signal-safe: only kill() on
// pids from a fixed table of atomics, so a SIGINT / SIGTERM handler may call it before _exit() (the CLI's
// conform command does: the groups are our own, and a terminal's Ctrl-C does not reach them).
void kill_running_impl_groups() noexcept;

class ImplProcess {
 public:
  // Does not start the process; the first exchange does (so a restart and a first start are the same path).
  // The first request after a (re)start may take startup_timeout_ms (a Python adapter importing torch takes
  // seconds); every later one timeout_ms.
  ImplProcess(std::string command, int timeout_ms, int startup_timeout_ms);
  ~ImplProcess();
  ImplProcess(const ImplProcess&) = delete;
  ImplProcess& operator=(const ImplProcess&) = delete;

  // Writes `line` + '\n' and returns the next line the process prints (without '\n'). Throws ProtocolError:
  // SpawnFailed, Crashed (EOF or exit before a full line; the message carries the exit status and the tail of
  // its stderr) or Timeout (no full line within the timeout of the write starting; the process group is killed).
  // After a throw the process is gone and the next call starts a fresh one.
  std::string exchange(const std::string& line);

  // Kills the process group (SIGKILL) and reaps the child. Safe to call when nothing runs.
  void stop();

  int starts() const { return starts_; }
  const std::string& command() const { return command_; }

 private:
  void start();
  std::string describe_exit();  // waits for the child and says how it ended, with its stderr tail

  std::string command_;
  int timeout_ms_;
  int startup_timeout_ms_;
  bool answered_since_start_ = false;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1, err_child_ = -1;
  std::string out_buffer_;   // bytes read from stdout past the last full line
  std::string err_tail_;     // last few KiB of stderr, kept for crash reports
  int starts_ = 0;
};

}  // namespace kvaudit::conform

// Child-process driver for `kvaudit conform`: posix_spawn of /bin/sh -c, non-blocking pipes, poll() deadlines.
#include "audit/conform/impl_process.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace kvaudit::conform {
namespace {

constexpr std::size_t kStderrTailBytes = 4096;

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A write to a pipe whose reader died must come back as EPIPE (reported as a crash), not kill kvaudit.
void ignore_sigpipe_once() {
  static const bool done = [] {
    std::signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

// Process groups of the running implementations, readable from a signal handler (lock-free atomics, fixed size;
// a run drives one implementation, the slack is for library callers running several).
constexpr int kGroupSlots = 16;
std::atomic<pid_t> running_groups[kGroupSlots];
static_assert(std::atomic<pid_t>::is_always_lock_free);

void register_group(pid_t pgid) {
  for (auto& slot : running_groups) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pgid)) return;
  }
}

void unregister_group(pid_t pgid) {
  for (auto& slot : running_groups) {
    pid_t mine = pgid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// Blocks SIGINT / SIGTERM / SIGHUP while a child is spawned and registered, so an interrupt either finds its
// group in the table or arrives before the child exists; never a child the handler cannot see.
class InterruptsBlocked {
 public:
  InterruptsBlocked() {
    sigset_t block;
    sigemptyset(&block);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, s);
    ::pthread_sigmask(SIG_BLOCK, &block, &saved_);
  }
  ~InterruptsBlocked() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  InterruptsBlocked(const InterruptsBlocked&) = delete;
  InterruptsBlocked& operator=(const InterruptsBlocked&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace

void kill_running_impl_groups() noexcept {
  for (auto& slot : running_groups) {
    const pid_t pgid = slot.load();
    if (pgid > 0) ::kill(-pgid, SIGKILL);
  }
}

ImplProcess::ImplProcess(std::string command, int timeout_ms, int startup_timeout_ms)
    : command_(std::move(command)), timeout_ms_(timeout_ms), startup_timeout_ms_(startup_timeout_ms) {}

ImplProcess::~ImplProcess() { stop(); }

void ImplProcess::start() {
  ignore_sigpipe_once();
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) throw ProtocolError(ProtocolErrorKind::SpawnFailed, std::strerror(errno));
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]), ::close(in_pipe[1]);
    throw ProtocolError(ProtocolErrorKind::SpawnFailed, std::strerror(errno));
  }
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]), ::close(in_pipe[1]), ::close(out_pipe[0]), ::close(out_pipe[1]);
    throw ProtocolError(ProtocolErrorKind::SpawnFailed, std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so a timeout kills the shell and whatever it started; default SIGPIPE for the child.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  // The child starts with no signal blocked (we block the interrupts around the spawn, see below).
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  const char* argv[] = {"/bin/sh", "-c", command_.c_str(), nullptr};
  pid_t pid = -1;
  int rc = 0;
  {
    InterruptsBlocked blocked;
    rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv), environ);
    if (rc == 0) register_group(pid);  // the group id is the child's pid (setpgroup 0)
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]), ::close(out_pipe[1]), ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]), ::close(out_pipe[0]), ::close(err_pipe[0]);
    throw ProtocolError(ProtocolErrorKind::SpawnFailed, "posix_spawn /bin/sh: " + std::string(std::strerror(rc)));
  }
  pid_ = pid;
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  err_child_ = err_pipe[0];
  for (int fd : {to_child_, from_child_, err_child_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  out_buffer_.clear();
  err_tail_.clear();
  answered_since_start_ = false;
  ++starts_;
}

void ImplProcess::stop() {
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);  // the group we created at spawn: the shell and its children, nothing else
    unregister_group(pid_);  // after the kill: an interrupt in between kills it again, harmlessly
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
  close_fd(to_child_);
  close_fd(from_child_);
  close_fd(err_child_);
  out_buffer_.clear();
}

std::string ImplProcess::describe_exit() {
  // Give the child a moment to finish writing its traceback and exit on its own before we kill it.
  close_fd(to_child_);
  auto deadline = Clock::now() + std::chrono::milliseconds(1000);
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
    char buf[4096];
    ssize_t n = err_child_ >= 0 ? ::read(err_child_, buf, sizeof buf) : -1;
    if (n > 0) {
      err_tail_.append(buf, static_cast<std::size_t>(n));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  for (char buf[4096];;) {  // drain what is left of stderr
    ssize_t n = err_child_ >= 0 ? ::read(err_child_, buf, sizeof buf) : -1;
    if (n <= 0) break;
    err_tail_.append(buf, static_cast<std::size_t>(n));
  }
  std::string how;
  if (done == pid_) {
    if (WIFEXITED(status)) how = "exited with status " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) how = "killed by signal " + std::to_string(WTERMSIG(status));
    else how = "ended";
    ::kill(-pid_, SIGKILL);  // stragglers the shell left in its group
    unregister_group(pid_);
    pid_ = -1;
  } else {
    how = "closed its output but did not exit";
  }
  stop();
  if (err_tail_.size() > kStderrTailBytes) err_tail_ = "..." + err_tail_.substr(err_tail_.size() - kStderrTailBytes);
  while (!err_tail_.empty() && (err_tail_.back() == '\n' || err_tail_.back() == ' ')) err_tail_.pop_back();
  return how + (err_tail_.empty() ? " (no stderr)" : "; stderr: " + err_tail_);
}

std::string ImplProcess::exchange(const std::string& request) {
  if (pid_ <= 0) start();
  std::string pending = request + "\n";
  std::size_t written = 0;
  const int timeout = answered_since_start_ ? timeout_ms_ : std::max(timeout_ms_, startup_timeout_ms_);
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout);
  for (;;) {
    auto newline = out_buffer_.find('\n');
    if (newline != std::string::npos && written == pending.size()) {
      std::string line = out_buffer_.substr(0, newline);
      out_buffer_.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      answered_since_start_ = true;
      return line;
    }
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {from_child_, POLLIN, 0};
    fds[n++] = {err_child_, POLLIN, 0};
    if (written < pending.size()) fds[n++] = {to_child_, POLLOUT, 0};
    int left = remaining_ms(deadline);
    int ready = left > 0 ? ::poll(fds, n, left) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      stop();
      throw ProtocolError(ProtocolErrorKind::Timeout,
                          "no response line within " + std::to_string(timeout) + " ms (" +
                              (written < pending.size() ? "it stopped reading its input" : "request fully written") +
                              "); process group killed");
    }
    if (n == 3 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = ::write(to_child_, pending.data() + written, pending.size() - written);
      if (w > 0) {
        written += static_cast<std::size_t>(w);
      } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
        throw ProtocolError(ProtocolErrorKind::Crashed, "it closed its input (" + std::string(std::strerror(errno)) +
                                                            ") and " + describe_exit());
      }
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      char buf[4096];
      ssize_t r = ::read(err_child_, buf, sizeof buf);
      if (r > 0) {
        err_tail_.append(buf, static_cast<std::size_t>(r));
        if (err_tail_.size() > 4 * kStderrTailBytes) err_tail_.erase(0, err_tail_.size() - kStderrTailBytes);
      }
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      ssize_t r = ::read(from_child_, buf, sizeof buf);
      if (r > 0) {
        out_buffer_.append(buf, static_cast<std::size_t>(r));
      } else if (r == 0) {
        std::string partial = out_buffer_.empty() ? "" : " after printing an incomplete line";
        throw ProtocolError(ProtocolErrorKind::Crashed, "no response line: it " + describe_exit() + partial);
      }
    }
  }
}

}  // namespace kvaudit::conform

// SPDX-License-Identifier: Apache-2.0
#include "tune/tuning_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "os/environment.h"
#include "os/make_directories.h"
#include "os/unique_fd.h"

namespace mlos::tune {

namespace {

constexpr const char* kSuffix = ".jsonl";

Status check_trusted(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return make_sys_error(errno, "cannot stat tuning directory " + dir);
  if (!S_ISDIR(st.st_mode)) return make_error(MLOS_ERR_SYSTEM, "tuning directory " + dir + " is not a directory");
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return make_error(MLOS_ERR_PERMISSION, "tuning directory " + dir + " belongs to uid " + std::to_string(st.st_uid) +
                                               ", neither this user nor root");
  }
  if ((st.st_mode & 022) != 0) {
    return make_error(MLOS_ERR_PERMISSION, "tuning directory " + dir + " is writable by others");
  }
  return Status::Ok();
}

// Reads one candidate's file into `r`.
void read_record(const std::string& path, CandidateRecord& r) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) continue;
    if (j.contains("started")) {
      ++r.runs_started;
    } else if (j.contains("step_ms") && j["step_ms"].is_number() && j["step_ms"].get<double>() > 0) {
      r.step_ms.push_back(j["step_ms"].get<double>());
    }
  }
}

}  // namespace

std::string default_tune_dir() {
  if (const char* d = os::env("MLOS_TUNE_DIR"); d != nullptr && *d != '\0') return d;
  if (::geteuid() == 0) return "/var/lib/mlos/tune";
  if (const char* x = std::getenv("XDG_STATE_HOME"); x != nullptr && *x == '/') return std::string(x) + "/mlos/tune";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h == '/') return std::string(h) + "/.local/state/mlos/tune";
  return "/tmp/mlos-tune-" + std::to_string(::geteuid());
}

std::string command_key(const std::vector<std::string>& argv, const std::string& cwd, int cpus) {
  std::string text = cwd + '\0' + std::to_string(cpus);
  for (const auto& a : argv) text += '\0' + a;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  return hex;
}

Result<TuningStore> TuningStore::open(const std::string& dir) {
  if (dir.empty() || dir.front() != '/') {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "tuning directory \"" + dir + "\" is not an absolute path");
  }
  if (Status s = os::make_directories(dir, 0700, "tuning directory"); !s) return s.error();
  if (Status s = check_trusted(dir); !s) return s.error();
  return TuningStore(dir);
}

Status TuningStore::describe(const std::string& key, const std::vector<std::string>& argv,
                             const std::string& cwd) const {
  const std::string d = dir_ + "/" + key;
  if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST) return make_sys_error(errno, "cannot create " + d);
  if (Status s = check_trusted(d); !s) return s;
  const std::string path = d + "/command.json";
  if (::access(path.c_str(), F_OK) == 0) return Status::Ok();
  nlohmann::json j = {{"argv", argv}, {"cwd", cwd}};
  return append_line(path, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

std::map<std::string, CandidateRecord> TuningStore::records(const std::string& key) const {
  std::map<std::string, CandidateRecord> out;
  const std::string d = dir_ + "/" + key;
  DIR* dir = ::opendir(d.c_str());
  if (dir == nullptr) return out;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    const size_t n = name.size(), s = std::char_traits<char>::length(kSuffix);
    if (n <= s || name.compare(n - s, s, kSuffix) != 0) continue;
    read_record(d + "/" + name, out[name.substr(0, n - s)]);
  }
  ::closedir(dir);
  return out;
}

Status TuningStore::note_start(const std::string& key, const std::string& candidate) const {
  return append_line(evidence_path(key, candidate), nlohmann::json{{"started", ::time(nullptr)}}.dump());
}

std::string TuningStore::evidence_path(const std::string& key, const std::string& candidate) const {
  return dir_ + "/" + key + "/" + candidate + kSuffix;
}

Status append_line(const std::string& path, const std::string& line) {
  os::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return make_sys_error(errno, "cannot open " + path);
  const std::string text = line + "\n";
  const ssize_t n = ::write(fd.get(), text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size())) return make_sys_error(n < 0 ? errno : EIO, "cannot append to " + path);
  return Status::Ok();
}

}  // namespace mlos::tune

// SPDX-License-Identifier: Apache-2.0
#include "engine/policy_report_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace mlos {

std::string policy_report_dir(const std::string& runtime_dir) { return runtime_dir + "/policy-reports"; }

std::string policy_report_path(const std::string& dir, uint64_t job) {
  return dir + "/" + std::to_string(job) + ".json";
}

Status write_policy_report(const std::string& dir, uint64_t job, const nlohmann::json& report) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return make_error(MLOS_ERR_SYSTEM, "cannot create " + dir + ": " + std::strerror(errno));
  }
  const std::string path = policy_report_path(dir, job);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const std::string text = report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return make_error(MLOS_ERR_SYSTEM, "cannot write " + tmp + ": " + std::strerror(errno));
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  close(fd);
  if (!written || rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(written ? errno : saved);
    unlink(tmp.c_str());
    return make_error(MLOS_ERR_SYSTEM, "cannot write " + path + ": " + why);
  }
  return Status::Ok();
}

void remove_policy_report(const std::string& dir, uint64_t job) { unlink(policy_report_path(dir, job).c_str()); }

void remove_policy_report_of(const std::string& dir, uint64_t job, int pid) {
  auto report = read_policy_report(dir, job);
  if (report && report->value("pid", -1) == pid) remove_policy_report(dir, job);
}

std::optional<nlohmann::json> read_policy_report(const std::string& dir, uint64_t job) {
  std::ifstream in(policy_report_path(dir, job));
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

}  // namespace mlos

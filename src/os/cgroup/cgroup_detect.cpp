// SPDX-License-Identifier: Apache-2.0
#include <fstream>
#include <sstream>

#include "os/cgroup/cgroup_driver.h"

namespace mlos::os {

CgroupMounts parse_cgroup_mounts(const std::string& mountinfo) {
  // Line: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
  CgroupMounts m;
  std::istringstream in(mountinfo);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts, tok;
    if (!(f >> id >> parent >> dev >> root >> point >> opts)) continue;
    while (f >> tok && tok != "-") {
    }
    std::string fstype, source, super;
    if (!(f >> fstype >> source >> super)) continue;
    if (fstype == "cgroup2") {
      if (m.unified.empty()) m.unified = point;
      continue;
    }
    if (fstype != "cgroup") continue;
    std::istringstream so(super);
    for (std::string opt; std::getline(so, opt, ',');) {
      if (opt == "cpuset" && m.cpuset.empty()) m.cpuset = point;
      if (opt == "cpu" && m.cpu.empty()) m.cpu = point;
      if (opt == "memory" && m.memory.empty()) m.memory = point;
      if (opt == "cpuacct" && m.cpuacct.empty()) m.cpuacct = point;
      if (opt == "devices" && m.devices.empty()) m.devices = point;
    }
  }
  return m;
}

Result<std::unique_ptr<CgroupDriver>> detect_cgroup_driver(const std::string& mountinfo_path, std::string base) {
  std::ifstream in(mountinfo_path);
  if (!in) return make_sys_error(errno, "cannot read " + mountinfo_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const CgroupMounts m = parse_cgroup_mounts(ss.str());
  if (!m.unified.empty()) {
    auto root = std::make_shared<LinuxCgroupFs>(m.unified);
    auto controllers = root->read("cgroup.controllers");
    std::istringstream words(controllers ? *controllers : "");
    int found = 0;
    for (std::string w; words >> w;) found += w == "cpuset" || w == "cpu" || w == "memory";
    if (found == 3) return make_cgroup_v2_driver(root, std::move(base));
  }
  if (!m.cpuset.empty() && !m.cpu.empty() && !m.memory.empty()) {
    CgroupV1Mounts v1{std::make_shared<LinuxCgroupFs>(m.cpuset), std::make_shared<LinuxCgroupFs>(m.cpu),
                      std::make_shared<LinuxCgroupFs>(m.memory),
                      m.cpuacct.empty() ? nullptr : std::make_shared<LinuxCgroupFs>(m.cpuacct),
                      m.devices.empty() ? nullptr : std::make_shared<LinuxCgroupFs>(m.devices)};
    return make_cgroup_v1_driver(std::move(v1), std::move(base));
  }
  return make_error(MLOS_ERR_UNSUPPORTED,
                    "no usable cgroup hierarchy: cgroup2 " + (m.unified.empty() ? std::string("not mounted")
                                                                                 : "at " + m.unified +
                                                                                       " lacks cpuset/cpu/memory") +
                        "; v1 cpuset " + (m.cpuset.empty() ? "missing" : m.cpuset) + ", cpu " +
                        (m.cpu.empty() ? "missing" : m.cpu) + ", memory " + (m.memory.empty() ? "missing" : m.memory));
}

}  // namespace mlos::os

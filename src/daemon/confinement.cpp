// SPDX-License-Identifier: Apache-2.0
#include "daemon/confinement.h"

#include <algorithm>
#include <cerrno>

#include "os/checked_json_file.h"
#include "os/log_sink.h"

namespace mlos::daemon {

namespace {

using nlohmann::json;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

size_t depth(const std::string& path) { return static_cast<size_t>(std::count(path.begin(), path.end(), '/')); }

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string file_in(const std::string& dir, const char* name) { return dir.empty() ? name : dir + "/" + name; }

os::CheckedJsonFile state_file(const std::string& dir) {
  return os::CheckedJsonFile(dir, "confinement.json", "mlos-confinement", 1);
}

}  // namespace

Confinement::Confinement(ConfinementConfig config, std::shared_ptr<os::CgroupFs> cpuset, std::string state_dir,
                         std::function<std::optional<ProcessFacts>(pid_t)> facts)
    : config_(std::move(config)), fs_(std::move(cpuset)), state_dir_(std::move(state_dir)), facts_(std::move(facts)) {}

void Confinement::note(const std::string& line) {
  log_message(MLOS_LOG_WARN, "confinement: " + line);
  errors_.push_back(line);
  if (errors_.size() > 16) errors_.erase(errors_.begin());
}

Result<std::vector<std::string>> Confinement::load() {
  std::vector<std::string> report;
  auto loaded = state_file(state_dir_).load();
  if (!loaded) return loaded.error();
  if (!loaded->has_value()) return report;
  try {
    const json& p = **loaded;
    active_ = p.at("active").get<bool>();
    auto pool = CpuSet::parse_list(p.at("pool").get<std::string>());
    if (!pool) return pool.error();
    pool_ = *pool;
    for (const auto& [cgroup, was] : p.at("narrowed").items()) narrowed_[cgroup] = was.get<std::string>();
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_STATE_CORRUPT, state_file(state_dir_).path() + ": " + e.what());
  }
  report.push_back(std::string("confinement left by the last mlosd: ") +
                   (active_ ? "others on CPUs " + pool_.to_list() : "none") + ", " +
                   std::to_string(narrowed_.size()) + " cgroup(s) narrowed; reconciled with the jobs now");
  return report;
}

CpuSet Confinement::withheld() const {
  if (!active_) return CpuSet{};
  auto root = fs_->read(config_.v2 ? "cpuset.cpus.effective" : "cpuset.cpus");
  auto node = root ? CpuSet::parse_list(trimmed(*root)) : Result<CpuSet>(root.error());
  return node ? node->minus(pool_) : CpuSet{};
}

Status Confinement::save_state() const {
  json narrowed = json::object();
  for (const auto& [cgroup, was] : narrowed_) narrowed[cgroup] = was;
  return state_file(state_dir_).save(json{{"active", active_}, {"pool", pool_.to_list()}, {"narrowed", narrowed}});
}

std::vector<std::string> Confinement::targets() const {
  if (config_.mode == "list") return config_.cgroups;
  std::vector<std::string> out;
  auto dirs = fs_->list_dirs("");
  if (!dirs) return out;
  const std::string own = config_.base.substr(0, config_.base.find('/'));
  for (const auto& d : *dirs) {
    if (d == own || d.rfind("mlos", 0) == 0) continue;  // mlOS's own (and other mlosd instances')
    out.push_back(d);
  }
  return out;
}

Status Confinement::ensure_shared(const CpuSet& pool) {
  const std::string base = config_.base, shared = this->shared();
  if (config_.v2) {
    (void)fs_->write("cgroup.subtree_control", "+cpuset");
    if (Status s = fs_->make_dir(base); !s) return s;
    (void)fs_->write(base + "/cgroup.subtree_control", "+cpuset");
    if (Status s = fs_->make_dir(shared); !s) return s;
  } else {
    if (Status s = fs_->make_dir(base); !s) return s;
    // A new v1 cpuset has no CPUs or nodes until they are written.
    for (const std::string& dir : {base, shared}) {
      if (dir == shared) {
        if (Status s = fs_->make_dir(shared); !s) return s;
      }
      for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
        auto mine = fs_->read(dir + "/" + file);
        if (!mine) return mine.error();
        if (!trimmed(*mine).empty()) continue;
        auto parent = fs_->read(parent_of(dir).empty() ? file : parent_of(dir) + "/" + file);
        if (!parent) return parent.error();
        if (Status s = fs_->write(dir + "/" + file, trimmed(*parent)); !s) return s;
      }
    }
  }
  return fs_->write(shared + "/cpuset.cpus", pool.to_list());
}

void Confinement::narrow(const std::string& cgroup, const CpuSet& pool) {
  if (!fs_->exists(cgroup)) {
    note("cgroup " + cgroup + " does not exist; not narrowed");
    return;
  }
  // v1: a child's CPUs must stay within its parent's, so the subtree is
  // narrowed from the leaves up. v2 narrows the effective CPUs of the
  // whole subtree through the cgroup itself.
  std::vector<std::string> dirs{cgroup};
  if (!config_.v2) {
    for (size_t i = 0; i < dirs.size() && dirs.size() < 4096; ++i) {
      if (auto kids = fs_->list_dirs(dirs[i])) {
        for (const auto& k : *kids) dirs.push_back(dirs[i] + "/" + k);
      }
    }
    std::stable_sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return depth(a) > depth(b); });
  } else {
    (void)fs_->write(file_in(parent_of(cgroup), "cgroup.subtree_control"), "+cpuset");
  }
  for (const auto& d : dirs) {
    if (!narrowed_.count(d)) {
      auto was = fs_->read(d + "/cpuset.cpus");
      if (!was) {
        note("cannot read " + d + "/cpuset.cpus: " + was.error().describe());
        continue;
      }
      narrowed_[d] = trimmed(*was);
      if (Status s = save_state(); !s) note("state not saved: " + s.error().describe());
    }
    const std::string& was = narrowed_.at(d);
    auto had = was.empty() ? Result<CpuSet>(pool) : CpuSet::parse_list(was);  // v2 "": inherits
    const CpuSet want = had ? (*had & pool) : CpuSet{};
    if (want.empty()) {
      note("cgroup " + d + " runs only on exclusive CPUs (" + was + "): left alone");
      continue;
    }
    if (Status s = fs_->write(d + "/cpuset.cpus", want.to_list()); !s) {
      note("cannot narrow " + d + " to " + want.to_list() + ": " + s.error().describe());
    }
  }
}

void Confinement::apply(const CpuSet& pool, const std::function<bool(pid_t)>& exempt) {
  const bool widening = active_ && !pool.is_subset_of(pool_);
  active_ = true;
  pool_ = pool;
  if (Status s = save_state(); !s) note("state not saved: " + s.error().describe());
  if (widening && !config_.v2) {
    // v1 parents widen before their children may: back to what they had.
    std::vector<std::pair<std::string, std::string>> order(narrowed_.begin(), narrowed_.end());
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return depth(a.first) < depth(b.first); });
    for (const auto& [cgroup, was] : order) (void)fs_->write(cgroup + "/cpuset.cpus", was);
  }
  if (config_.mode == "node") {
    if (Status s = ensure_shared(pool); !s) note("cannot set up " + shared() + ": " + s.error().describe());
  }
  for (const auto& t : targets()) narrow(t, pool);
  sweep(exempt);
}

void Confinement::undo() {
  if (config_.mode == "node" && fs_->exists(shared())) {
    if (auto procs = fs_->read(shared() + "/cgroup.procs")) {
      size_t pos = 0;
      const std::string& text = *procs;
      while (pos < text.size()) {
        const size_t end = text.find('\n', pos);
        const std::string pid = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        if (!pid.empty()) (void)fs_->write("cgroup.procs", pid);  // it may have exited meanwhile
        pos = end == std::string::npos ? text.size() : end + 1;
      }
    }
    if (Status s = fs_->remove_dir(shared()); !s) note("cannot remove " + shared() + ": " + s.error().describe());
  }
  std::vector<std::pair<std::string, std::string>> order(narrowed_.begin(), narrowed_.end());
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return depth(a.first) < depth(b.first); });
  for (const auto& [cgroup, was] : order) {
    if (!fs_->exists(cgroup)) continue;
    std::string value = was;
    if (value.empty()) {
      // v2 "": it inherited its parent's CPUs. Emptying the list again
      // (written as a newline, never as zero bytes) works only while the
      // cgroup has no tasks; Linux 6.1 refuses it with ENOSPC once it has
      // (seen under systemd in the VM test bed, system.slice). Then the
      // parent's effective CPUs, spelled out, are the same CPUs.
      if (fs_->write(cgroup + "/cpuset.cpus", "\n")) continue;
      auto parents = fs_->read(file_in(parent_of(cgroup), "cpuset.cpus.effective"));
      value = parents ? trimmed(*parents) : "";
    }
    if (Status s = fs_->write(cgroup + "/cpuset.cpus", value); !s) {
      note("cannot restore " + cgroup + " to \"" + was + "\": " + s.error().describe());
    }
  }
  narrowed_.clear();
  left_alone_.clear();
  overridden_.clear();
  active_ = false;
  pool_ = CpuSet{};
  if (Status s = save_state(); !s) note("state not saved: " + s.error().describe());
}

bool Confinement::give_back() {
  if (config_.mode == "off") return false;
  const bool held = active_ || !narrowed_.empty() || (config_.mode == "node" && fs_->exists(shared()));
  if (held) undo();
  planned_ = false;  // whoever runs next plans afresh
  return held;
}

void Confinement::update(const CpuSet& node, const CpuSet& exclusive, const std::function<bool(pid_t)>& exempt) {
  if (config_.mode == "off") return;
  const ConfinementPlan plan = plan_confinement(node, exclusive);
  reason_ = plan.reason;
  if (planned_ && plan.active == active_ && (!plan.active || plan.pool == pool_)) return;
  planned_ = true;
  if (plan.active) {
    apply(plan.pool, exempt);
  } else if (active_ || !narrowed_.empty() || (config_.mode == "node" && fs_->exists(shared()))) {
    undo();
  }
}

void Confinement::sweep(const Exempt& exempt) {
  if (!active_ || config_.mode != "node") return;
  auto procs = fs_->read("cgroup.procs");
  if (!procs) {
    note("cannot read the root cgroup's processes: " + procs.error().describe());
    return;
  }
  std::set<pid_t> present;
  const std::string& text = *procs;
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = text.find('\n', pos);
    const std::string field = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(field));
    } catch (const std::exception&) {
      continue;
    }
    present.insert(pid);
    if (pid <= 0 || kernel_threads_.count(pid) || (exempt && exempt(pid))) continue;
    auto f = facts_(pid);
    if (!f) continue;  // exited
    if (f->kernel_thread) {
      kernel_threads_.insert(pid);
      continue;
    }
    if (!f->affinity.intersects(pool_)) {
      // Pinned by its own affinity to exclusive CPUs only. Root's choice is
      // respected (an IRQ-bound helper, a pinned monitor); anyone else's is
      // not: an exclusive job would otherwise share its CPU with whoever
      // pinned a process there first (issue 47, finding 12). Moved into
      // the pool's cpuset, its affinity becomes the pool (Linux >= 6.2
      // remembers the mask it asked for and gives it back when it is
      // allowed again).
      if (f->uid == 0) {
        left_alone_[pid] = json{{"pid", pid}, {"comm", f->comm}, {"cpus", f->affinity.to_list()}};
        continue;
      }
      overridden_[pid] = json{{"pid", pid}, {"comm", f->comm}, {"uid", f->uid}, {"cpus", f->affinity.to_list()}};
    }
    left_alone_.erase(pid);
    if (Status s = fs_->write(shared() + "/cgroup.procs", std::to_string(pid)); !s && s.error().sys_errno != ESRCH) {
      kernel_threads_.insert(pid);  // not movable (a kernel worker the flags missed): do not retry
      note("cannot move pid " + std::to_string(pid) + " (" + f->comm + "): " + s.error().describe());
    }
  }
  for (auto it = left_alone_.begin(); it != left_alone_.end();) {
    it = present.count(it->first) ? std::next(it) : left_alone_.erase(it);
  }
  for (auto it = overridden_.begin(); it != overridden_.end();) {
    it = facts_(it->first) ? std::next(it) : overridden_.erase(it);  // gone: no longer reported
  }
  for (auto it = kernel_threads_.begin(); it != kernel_threads_.end();) {
    it = present.count(*it) ? std::next(it) : kernel_threads_.erase(it);
  }
}

json Confinement::status() const {
  json narrowed = json::array(), alone = json::array();
  for (const auto& [cgroup, was] : narrowed_) narrowed.push_back(json{{"cgroup", cgroup}, {"was", was}});
  for (const auto& [pid, j] : left_alone_) alone.push_back(j);
  json overridden = json::array();
  for (const auto& [pid, j] : overridden_) overridden.push_back(j);
  json j{{"mode", config_.mode},
         {"active", active_},
         {"pool", active_ ? json(pool_.to_list()) : json(nullptr)},
         {"reason", active_ ? json(nullptr) : json(config_.mode == "off" ? "confinement is off" : reason_)},
         {"narrowed", narrowed},
         {"left_alone", alone},
         {"affinity_overridden", overridden},
         {"errors", errors_}};
  if (config_.mode == "node") {
    j["shared_cgroup"] = shared();
    size_t n = 0;
    if (active_) {
      if (auto procs = fs_->read(shared() + "/cgroup.procs")) n = static_cast<size_t>(std::count(procs->begin(), procs->end(), '\n'));
    }
    j["confined_processes"] = n;
  }
  return j;
}

}  // namespace mlos::daemon

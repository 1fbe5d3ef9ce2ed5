// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_protocol.h"

#include <climits>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string_view>

#include "core/json_fields.h"

namespace mlos::policy {

using nlohmann::json;

namespace {

constexpr const char* kKindNames[kActionKindCount] = {
    "cpu_weight",     "io_weight",      "memory_high",         "memory_low", "threads", "file_advice",
    "request_policy", "release_policy", "recommend_placement", "report"};

bool has_target(ActionKind k) { return k == ActionKind::kRequestPolicy || k == ActionKind::kReleasePolicy; }
bool has_payload(ActionKind k) {
  return k == ActionKind::kRequestPolicy || k == ActionKind::kRecommendPlacement || k == ActionKind::kReport;
}
// The payloads that must be a JSON object's text.
bool payload_is_object(ActionKind k) { return k == ActionKind::kRequestPolicy || k == ActionKind::kReport; }

double number_field(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number()) throw std::invalid_argument(std::string("'") + key + "' must be a number");
  return v.get<double>();
}

int int_field(const json& j, const char* key, int lo, int hi) { return int_in_range(j.at(key), key, lo, hi); }

}  // namespace

bool valid_policy_name(const std::string& name) {
  if (name.empty() || name.size() > 63 || name[0] == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

const char* action_kind_name(ActionKind kind) { return kKindNames[static_cast<int>(kind)]; }

std::optional<ActionKind> action_kind_from_name(std::string_view name) {
  for (int i = 0; i < kActionKindCount; ++i) {
    if (name == kKindNames[i]) return static_cast<ActionKind>(i);
  }
  return std::nullopt;
}

json action_to_json(const Action& a) {
  json j{{"job", a.job}, {"kind", action_kind_name(a.kind)}, {"value", a.value}};
  if (a.kind == ActionKind::kFileAdvice) {
    j["path"] = a.path;
    if (a.offset != 0 || a.length != 0) {
      j["offset"] = a.offset;
      j["length"] = a.length;
    }
  }
  if (has_target(a.kind)) j["target"] = a.target;
  if (has_payload(a.kind)) j["payload"] = a.payload;
  return j;
}

Result<Action> action_from_json(const json& j) {
  try {
    if (!j.is_object()) throw std::invalid_argument("an action must be an object");
    Action a;
    a.job = non_negative_field(j, "job");
    const json& kind = j.at("kind");
    if (!kind.is_string()) throw std::invalid_argument("'kind' must be a string");
    auto k = action_kind_from_name(kind.get<std::string>());
    if (!k) throw std::invalid_argument("unknown action kind '" + kind.get<std::string>().substr(0, 64) + "'");
    a.kind = *k;
    a.value = non_negative_field(j, "value");
    if (j.contains("path")) {
      if (a.kind != ActionKind::kFileAdvice) throw std::invalid_argument("'path' is for file_advice only");
      if (!j["path"].is_string()) throw std::invalid_argument("'path' must be a string");
      a.path = j["path"].get<std::string>();
      if (a.path.empty() || a.path.size() >= PATH_MAX) throw std::invalid_argument("'path' must be 1..PATH_MAX-1 bytes");
    } else if (a.kind == ActionKind::kFileAdvice) {
      throw std::invalid_argument("file_advice needs a 'path'");
    }
    if (j.contains("offset") || j.contains("length")) {
      if (a.kind != ActionKind::kFileAdvice) throw std::invalid_argument("'offset' and 'length' are for file_advice only");
      a.offset = non_negative_field(j, "offset");
      a.length = non_negative_field(j, "length");
    }
    if (a.kind == ActionKind::kRecommendPlacement && a.value != MLOS_POLICY_PLACEMENT_SHARED &&
        a.value != MLOS_POLICY_PLACEMENT_EXCLUSIVE) {
      throw std::invalid_argument("a placement is " + std::to_string(MLOS_POLICY_PLACEMENT_SHARED) + " (shared) or " +
                                  std::to_string(MLOS_POLICY_PLACEMENT_EXCLUSIVE) + " (exclusive)");
    }
    if (j.contains("target") != has_target(a.kind)) {
      throw std::invalid_argument(has_target(a.kind) ? "a policy request or release needs a 'target'"
                                                     : "'target' is for request_policy and release_policy only");
    }
    if (has_target(a.kind)) {
      if (!j["target"].is_string() || !valid_policy_name(j["target"].get<std::string>())) {
        throw std::invalid_argument("'target' must be a policy name ([a-z0-9-]{1,63})");
      }
      a.target = j["target"].get<std::string>();
    }
    if (j.contains("payload") != has_payload(a.kind)) {
      throw std::invalid_argument(has_payload(a.kind) ? std::string(action_kind_name(a.kind)) + " needs a 'payload'"
                                                      : "'payload' is not for " + std::string(action_kind_name(a.kind)));
    }
    if (has_payload(a.kind)) {
      if (!j["payload"].is_string() || j["payload"].get_ref<const std::string&>().size() > kMaxActionPayloadBytes) {
        throw std::invalid_argument("'payload' must be a string of at most " + std::to_string(kMaxActionPayloadBytes) +
                                    " bytes");
      }
      a.payload = j["payload"].get<std::string>();
      if (payload_is_object(a.kind)) {
        const json parsed = json::parse(a.payload, nullptr, false);
        if (!parsed.is_object()) throw std::invalid_argument("'payload' must be a JSON object's text");
      }
    }
    return a;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("bad action: ") + e.what());
  }
}

namespace {

const std::string& absolute_path(const json& v, const char* what) {
  if (!v.is_string()) throw std::invalid_argument(std::string(what) + " must be a string");
  const std::string& p = v.get_ref<const std::string&>();
  if (p.empty() || p[0] != '/' || p.size() >= PATH_MAX || p.find('\0') != std::string::npos) {
    throw std::invalid_argument(std::string(what) + " must be an absolute path of at most PATH_MAX-1 bytes");
  }
  return p;
}

}  // namespace

size_t json_string_bytes(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += c < 0x20 ? 6 : (c == '"' || c == '\\') ? 2 : 1;
  return n;
}

json job_reads_to_json(const JobReads& r) {
  json files = json::array(), reads = json::array();
  std::map<std::string_view, size_t> index;
  for (const FileRead& read : r.reads) {
    auto [it, fresh] = index.emplace(read.path, files.size());
    if (fresh) files.push_back(read.path);
    reads.push_back(json::array({it->second, read.offset, read.length}));
  }
  return json{{"job", r.job},
              {"files", std::move(files)},
              {"reads", std::move(reads)},
              {"lost", r.lost},
              {"plan",
               {{"generation", r.plan.generation},
                {"position", r.plan.position},
                {"total", r.plan.total},
                {"paths", r.plan.paths},
                {"sizes", r.plan.sizes}}}};
}

Result<JobReads> job_reads_from_json(const json& j) {
  try {
    if (!j.is_object()) throw std::invalid_argument("a read log must be an object");
    JobReads r;
    r.job = non_negative_field(j, "job");
    r.lost = non_negative_field(j, "lost");
    const json& files = j.at("files");
    const json& reads = j.at("reads");
    if (!files.is_array() || !reads.is_array()) throw std::invalid_argument("'files' and 'reads' must be arrays");
    if (reads.size() > kMaxReadsPerEvent || files.size() > reads.size()) {
      throw std::invalid_argument("more than " + std::to_string(kMaxReadsPerEvent) + " reads or more files than reads");
    }
    size_t path_bytes = 0;
    std::vector<const std::string*> names;
    for (const json& f : files) {
      names.push_back(&absolute_path(f, "a file"));
      path_bytes += names.back()->size();
    }
    for (const json& read : reads) {
      if (!read.is_array() || read.size() != 3 || !is_non_negative_integer(read[0]) ||
          !is_non_negative_integer(read[1]) || !is_non_negative_integer(read[2])) {
        throw std::invalid_argument("a read must be [file_index, offset, length] of non-negative integers");
      }
      const uint64_t file = read[0].get<uint64_t>();
      if (file >= names.size()) throw std::invalid_argument("a read names file " + std::to_string(file) + " of none");
      r.reads.push_back(FileRead{*names[file], read[1].get<uint64_t>(), read[2].get<uint64_t>()});
    }
    const json& plan = j.at("plan");
    if (!plan.is_object()) throw std::invalid_argument("'plan' must be an object");
    r.plan.generation = non_negative_field(plan, "generation");
    r.plan.position = non_negative_field(plan, "position");
    r.plan.total = non_negative_field(plan, "total");
    const json& paths = plan.at("paths");
    const json& sizes = plan.at("sizes");
    if (!paths.is_array() || !sizes.is_array() || paths.size() != sizes.size() || paths.size() > kMaxPlanWindow) {
      throw std::invalid_argument("the plan's 'paths' and 'sizes' must be arrays of one length, at most " +
                                  std::to_string(kMaxPlanWindow));
    }
    for (size_t i = 0; i < paths.size(); ++i) {
      r.plan.paths.push_back(absolute_path(paths[i], "a plan entry"));
      path_bytes += r.plan.paths.back().size();
      if (!sizes[i].is_number_integer() || sizes[i].get<int64_t>() < -1) {
        throw std::invalid_argument("a plan size must be an integer >= -1");
      }
      r.plan.sizes.push_back(sizes[i].get<int64_t>());
    }
    // The engine's budget counts escaped bytes and lets the first read and
    // plan entry through whatever their size: at most two paths over.
    if (path_bytes > kMaxReadPathBytes + 2 * PATH_MAX) {
      throw std::invalid_argument("the read log's paths exceed " + std::to_string(kMaxReadPathBytes) + " bytes");
    }
    if (r.plan.position > r.plan.total || r.plan.paths.size() > r.plan.total - r.plan.position) {
      throw std::invalid_argument("the plan's window lies outside the plan");
    }
    return r;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("bad read log: ") + e.what());
  }
}

mlos_policy_job_figures_t empty_figures(uint64_t job) {
  mlos_policy_job_figures_t f;
  std::memset(&f, 0, sizeof f);
  f.struct_size = sizeof f;
  f.job = job;
  f.primary_node = -1;
  f.cpu_seconds = f.owner_cpu_seconds = f.cpus_busy_seconds = -1;
  f.memory_pressure_level = -1;
  f.collective_seconds = -1;
  return f;
}

void set_figure_cpus(mlos_policy_job_figures_t& f, const CpuSet& cpus) {
  f.num_cpus = cpus.count();
  std::string list = cpus.to_list();
  f.cpus_truncated = 0;
  if (list.size() >= sizeof f.cpus) {
    list.resize(list.rfind(',', sizeof f.cpus - 1));
    f.cpus_truncated = 1;
  }
  std::memcpy(f.cpus, list.c_str(), list.size() + 1);
}

json figures_to_json(const mlos_policy_job_figures_t& f) {
  json seconds = json::array(), entries = json::array();
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    seconds.push_back(f.phase_seconds[p]);
    entries.push_back(f.phase_entries[p]);
  }
  return json{{"job", f.job},
              {"now", f.now_seconds},
              {"phase", f.phase},
              {"priority", f.priority},
              {"phase_seconds", std::move(seconds)},
              {"phase_entries", std::move(entries)},
              {"num_cpus", f.num_cpus},
              {"cpus", std::string(f.cpus, strnlen(f.cpus, sizeof f.cpus))},
              {"cpus_truncated", f.cpus_truncated != 0},
              {"primary_node", f.primary_node},
              {"recommended_threads", f.recommended_threads},
              {"cpu_seconds", f.cpu_seconds},
              {"owner_cpu_seconds", f.owner_cpu_seconds},
              {"cpus_busy_seconds", f.cpus_busy_seconds},
              {"memory_bytes", f.memory_bytes},
              {"memory_limit_bytes", f.memory_limit_bytes},
              {"memory_known", f.memory_known != 0},
              {"memory_pressure_level", f.memory_pressure_level},
              {"collective_seconds", f.collective_seconds}};
}

Result<mlos_policy_job_figures_t> figures_from_json(const json& j) {
  try {
    if (!j.is_object()) throw std::invalid_argument("figures must be an object");
    mlos_policy_job_figures_t f = empty_figures(non_negative_field(j, "job"));
    f.now_seconds = number_field(j, "now");
    f.phase = int_field(j, "phase", 0, MLOS_TRAINING_PHASE_COUNT - 1);
    f.priority = int_field(j, "priority", MLOS_PRIORITY_MIN, MLOS_PRIORITY_MAX);
    const json& seconds = j.at("phase_seconds");
    const json& entries = j.at("phase_entries");
    if (!seconds.is_array() || seconds.size() != MLOS_TRAINING_PHASE_COUNT || !entries.is_array() ||
        entries.size() != MLOS_TRAINING_PHASE_COUNT) {
      throw std::invalid_argument("phase_seconds and phase_entries must hold one value per phase");
    }
    for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
      if (!seconds[p].is_number() || !is_non_negative_integer(entries[p])) {
        throw std::invalid_argument("phase figures must be numbers");
      }
      f.phase_seconds[p] = seconds[p].get<double>();
      f.phase_entries[p] = entries[p].get<uint64_t>();
    }
    f.num_cpus = int_field(j, "num_cpus", 0, INT_MAX);
    const json& cpus = j.at("cpus");
    if (!cpus.is_string() || cpus.get<std::string>().size() >= sizeof f.cpus) {
      throw std::invalid_argument("'cpus' must be a cpu list shorter than MLOS_POLICY_CPU_LIST_MAX");
    }
    const std::string list = cpus.get<std::string>();
    std::memcpy(f.cpus, list.c_str(), list.size() + 1);
    if (!j.at("cpus_truncated").is_boolean() || !j.at("memory_known").is_boolean()) {
      throw std::invalid_argument("'cpus_truncated' and 'memory_known' must be booleans");
    }
    f.cpus_truncated = j["cpus_truncated"].get<bool>() ? 1 : 0;
    f.primary_node = int_field(j, "primary_node", -1, INT_MAX);
    f.recommended_threads = int_field(j, "recommended_threads", 0, INT_MAX);
    f.cpu_seconds = number_field(j, "cpu_seconds");
    f.owner_cpu_seconds = number_field(j, "owner_cpu_seconds");
    f.cpus_busy_seconds = number_field(j, "cpus_busy_seconds");
    f.memory_bytes = non_negative_field(j, "memory_bytes");
    f.memory_limit_bytes = non_negative_field(j, "memory_limit_bytes");
    f.memory_known = j["memory_known"].get<bool>() ? 1 : 0;
    f.memory_pressure_level = int_field(j, "memory_pressure_level", -1, 2);
    // Added later: absent from an older engine's figures.
    if (j.contains("collective_seconds")) f.collective_seconds = number_field(j, "collective_seconds");
    return f;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("bad job figures: ") + e.what());
  }
}

json PolicyInfo::to_json() const {
  return json{{"name", name},
              {"description", description},
              {"config_schema", config_schema},
              {"tick_interval_ms", tick_interval_ms}};
}

Result<PolicyInfo> policy_info_from_json(const json& j) {
  try {
    PolicyInfo info;
    for (const char* key : {"name", "description", "config_schema"}) {
      if (!j.at(key).is_string()) throw std::invalid_argument(std::string("'") + key + "' must be a string");
    }
    info.name = j["name"].get<std::string>();
    info.description = j["description"].get<std::string>();
    info.config_schema = j["config_schema"].get<std::string>();
    info.tick_interval_ms = static_cast<uint32_t>(int_field(j, "tick_interval_ms", 1, 3600 * 1000));
    return info;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("bad policy info: ") + e.what());
  }
}

Result<HostReply> parse_host_reply(const json& payload) {
  try {
    if (!payload.is_object()) throw std::invalid_argument("a reply must be an object");
    HostReply r;
    r.id = non_negative_field(payload, "id");
    const json& ok = payload.at("ok");
    if (!ok.is_boolean()) throw std::invalid_argument("'ok' must be a boolean");
    if (!ok.get<bool>()) {
      const json& e = payload.at("error");
      if (!e.is_object() || !e.at("code").is_number_integer() || !e.at("message").is_string()) {
        throw std::invalid_argument("'error' must hold a code and a message");
      }
      // mlOS's error codes are negative; a code of 0 would turn a refusal
      // into MLOS_OK wherever the error is handed back through the C API.
      const int code = int_field(e, "code", INT_MIN, -1);
      r.error = make_error(code, e["message"].get<std::string>().substr(0, kMaxLogLength));
    }
    if (payload.contains("actions")) {
      const json& actions = payload["actions"];
      if (!actions.is_array() || actions.size() > kMaxActionsPerReply) {
        throw std::invalid_argument("'actions' must be an array of at most " + std::to_string(kMaxActionsPerReply));
      }
      for (const json& a : actions) {
        auto action = action_from_json(a);
        if (!action) throw std::invalid_argument(action.error().message);
        r.actions.push_back(std::move(*action));
      }
    }
    if (payload.contains("dropped_actions")) r.dropped_actions = non_negative_field(payload, "dropped_actions");
    if (payload.contains("logs")) {
      const json& logs = payload["logs"];
      if (!logs.is_array() || logs.size() > kMaxLogsPerReply) {
        throw std::invalid_argument("'logs' must be an array of at most " + std::to_string(kMaxLogsPerReply));
      }
      for (const json& l : logs) {
        if (!l.is_object() || !l.at("message").is_string()) throw std::invalid_argument("a log line needs a message");
        r.logs.push_back(HostLog{int_field(l, "level", MLOS_POLICY_LOG_ERROR, MLOS_POLICY_LOG_DEBUG),
                                 l["message"].get<std::string>().substr(0, kMaxLogLength)});
      }
    }
    if (payload.contains("info")) {
      if (!payload["info"].is_object()) throw std::invalid_argument("'info' must be an object");
      r.info = payload["info"];
    }
    if (payload.contains("reads_used")) {
      if (!payload["reads_used"].is_boolean()) throw std::invalid_argument("'reads_used' must be a boolean");
      r.reads_used = payload["reads_used"].get<bool>();
    }
    return r;
  } catch (const std::exception& e) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("policy host sent a bad reply: ") + e.what());
  }
}

}  // namespace mlos::policy

// SPDX-License-Identifier: Apache-2.0
#include "run_tuning.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "os/environment.h"
#include "tune/allocator_library.h"
#include "tune/launch_candidates.h"
#include "tune/tuning_decision.h"
#include "tune/tuning_store.h"

namespace mlos::cli {

namespace {

// MLOS_TUNE_CHOICE through the table (os/environment.h), LD_PRELOAD as it is.
std::string env_or_empty(const char* name) {
  const char* v = os::env_or_foreign(name);
  return v != nullptr ? v : "";
}

void set_for_command(TuningReport& r, const std::string& name, const std::string& value) {
  setenv(name.c_str(), value.c_str(), 1);
  r.set.push_back(name + "=" + value);
}

std::string current_dir() {
  char buf[PATH_MAX];
  return getcwd(buf, sizeof buf) != nullptr ? buf : "";
}

}  // namespace

std::string TuningReport::text() const {
  std::string out = "mlos run: tuning for this " + command_kind + " command: ";
  out += candidate.empty() ? "nothing chosen" : candidate + (library.empty() ? "" : " (" + library + ")");
  if (!reason.empty()) out += "\n  why: " + reason;
  for (const auto& s : set) out += "\n  set: " + s;
  for (const auto& n : notes) out += "\n  note: " + n;
  if (!evidence.empty()) out += "\n  step times recorded in " + evidence;
  return out;
}

nlohmann::json TuningReport::to_json() const {
  return {{"candidate", candidate}, {"reason", reason}, {"command_kind", command_kind}, {"library", library},
          {"set", set},            {"notes", notes},   {"evidence", evidence}};
}

TuningReport skip_run_tuning() {
  TuningReport r;
  r.reason = "--no-tune: the environment is passed on as it is";
  unsetenv("MLOS_TUNE_EVIDENCE");
  return r;
}

TuningReport apply_run_tuning(const std::vector<std::string>& command, int cpus) {
  TuningReport r;
  const tune::CommandKind kind = tune::classify_command(command);
  r.command_kind = tune::command_kind_name(kind);
  if (!env_or_empty("MLOS_TUNE_CHOICE").empty()) {
    // An outer mlos run chose for the whole process tree; its evidence
    // file stays, so this command's steps count for the outer choice.
    r.reason = "an outer mlos run chose " + env_or_empty("MLOS_TUNE_CHOICE") + "; kept";
    return r;
  }
  const std::string preload = env_or_empty("LD_PRELOAD");
  if (tune::preloads_an_allocator(preload)) {
    r.reason = "LD_PRELOAD already names an allocator (" + preload + "); left as it is";
    return r;
  }

  const auto dirs = tune::allocator_search_dirs();
  std::vector<std::string> available;
  std::map<std::string, tune::LaunchCandidate> by_name;
  std::map<std::string, std::string> library_of;  // candidate -> the allocator's path
  std::vector<std::string> order;
  for (const auto& c : tune::candidates_for(kind)) {
    order.push_back(c.name);
    by_name[c.name] = c;
    const auto library = c.allocator.empty() ? std::nullopt : tune::find_allocator(c.allocator, dirs);
    if (library) library_of[c.name] = *library;
    if (c.allocator.empty() || library) {
      available.push_back(c.name);
    } else {
      r.notes.push_back(c.name + " is not installed (Debian package " + tune::allocator_package(c.allocator) +
                        "); not a candidate");
    }
  }

  std::map<std::string, tune::CandidateRecord> records;
  std::string key;
  auto store = tune::TuningStore::open(tune::default_tune_dir());
  const std::string cwd = current_dir();
  if (!store) {
    r.notes.push_back("no tuning store, so nothing is learnt from this run: " + store.error().describe());
  } else {
    key = tune::command_key(command, cwd, cpus);
    if (Status s = store->describe(key, command, cwd); !s) {
      r.notes.push_back("the tuning store cannot record this command: " + s.error().describe());
      key.clear();
    } else {
      records = store->records(key);
    }
  }

  const tune::Decision d = tune::decide(order, available, records);
  r.candidate = d.candidate;
  r.reason = d.reason;
  if (d.candidate.empty()) return r;
  const tune::LaunchCandidate& chosen = by_name.at(d.candidate);
  if (!chosen.allocator.empty()) {
    r.library = library_of.at(d.candidate);
    set_for_command(r, "LD_PRELOAD", preload.empty() ? r.library : r.library + ":" + preload);
  }
  for (const auto& [name, value] : chosen.env) {
    if (std::getenv(name.c_str()) != nullptr) {
      r.notes.push_back(name + " is set already; " + d.candidate + "'s " + value + " not applied");
      continue;
    }
    set_for_command(r, name, value);
  }
  setenv("MLOS_TUNE_CHOICE", d.candidate.c_str(), 1);
  setenv("MLOS_TUNE_REASON", d.reason.c_str(), 1);
  if (store && !key.empty()) {
    if (Status s = store->note_start(key, d.candidate); !s) {
      r.notes.push_back("this run is not recorded: " + s.error().describe());
    } else {
      r.evidence = store->evidence_path(key, d.candidate);
      setenv("MLOS_TUNE_EVIDENCE", r.evidence.c_str(), 1);
    }
  }
  return r;
}

}  // namespace mlos::cli

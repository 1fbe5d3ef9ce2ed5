// SPDX-License-Identifier: Apache-2.0
// Claims across processes: exclusive CPUs never overlap, shared ones may,
// a SIGKILLed owner's claim is reclaimed, a reused PID is not mistaken for
// the owner, and a corrupt ledger changes nothing.
#include <gtest/gtest.h>
#include <mlos/training.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "integration/child_process.h"
#include "integration/proc_observer.h"

using namespace mlos_test;

namespace {

std::string ledger_path() { return std::string(getenv("MLOS_RUNTIME_DIR")) + "/claims.json"; }

int request(int cpus, bool exclusive, mlos_training_resources_t** res, std::string* cpu_list = nullptr) {
  mlos_training_resource_request_t req = {.num_cpus = cpus, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = exclusive};
  int rc = mlos_training_request_resources(&req, res);
  if (rc == MLOS_OK && cpu_list != nullptr) {
    int ids[256];
    size_t n = 0;
    mlos_training_get_cpus(*res, ids, 256, &n);
    cpu_list->clear();
    for (size_t i = 0; i < n; ++i) *cpu_list += (i ? "," : "") + std::to_string(ids[i]);
  }
  return rc;
}

// A child that requests and holds CPUs until killed; reports "ok <cpus>" or
// "err <code>".
std::function<int(ChildProcess&)> holder(int cpus, bool exclusive) {
  return [=](ChildProcess& self) {
    mlos_training_resources_t* res = nullptr;
    std::string list;
    int rc = request(cpus, exclusive, &res, &list);
    self.report(rc == MLOS_OK ? "ok " + list : "err " + std::to_string(rc));
    return 0;
  };
}

int usable_cpus() { return allowed_cpu_count(); }

}  // namespace

TEST(LedgerClaims, ExclusiveClaimsOfTwoProcessesNeverOverlap) {
  if (usable_cpus() < 2) GTEST_SKIP() << "needs 2 CPUs";
  ChildProcess a(holder(1, true), true);
  std::string ra = a.read_line();
  ChildProcess b(holder(1, true), true);
  std::string rb = b.read_line();
  ASSERT_EQ(ra.substr(0, 3), "ok ") << ra;
  ASSERT_EQ(rb.substr(0, 3), "ok ") << rb;
  EXPECT_NE(ra, rb);
  if (usable_cpus() == 2) {
    mlos_training_resources_t* res = nullptr;
    EXPECT_EQ(request(1, true, &res), MLOS_ERR_CPUS_BUSY);
    EXPECT_EQ(res, nullptr);
    EXPECT_EQ(request(1, false, &res), MLOS_ERR_CPUS_BUSY);  // shared never overlaps exclusive
  }
}

TEST(LedgerClaims, SharedClaimsMayOverlap) {
  if (usable_cpus() < 2) GTEST_SKIP() << "needs 2 CPUs";
  ChildProcess a(holder(usable_cpus(), false), true);
  std::string ra = a.read_line();
  ASSERT_EQ(ra.substr(0, 3), "ok ") << ra;
  mlos_training_resources_t* res = nullptr;
  std::string mine;
  ASSERT_EQ(request(usable_cpus(), false, &res, &mine), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ("ok " + mine, ra);  // the very same CPUs
  // ...but an exclusive request cannot take CPUs someone shares.
  mlos_training_resources_t* excl = nullptr;
  EXPECT_EQ(request(1, true, &excl), MLOS_ERR_CPUS_BUSY);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(LedgerClaims, Kill9ReclaimsTheClaim) {
  const int n = usable_cpus();
  ChildProcess a(holder(n, true), true);
  const std::string ra = a.read_line();
  ASSERT_EQ(ra.substr(0, 3), "ok ") << ra;
  const std::string pid = "\"pid\": " + std::to_string(a.pid());
  EXPECT_NE(read_text(ledger_path()).find(pid), std::string::npos);
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(request(1, true, &res), MLOS_ERR_CPUS_BUSY);
  a.kill9();
  ASSERT_EQ(request(n, true, &res), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(read_text(ledger_path()).find(pid), std::string::npos);  // pruned from the file
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(LedgerClaims, ReusedPidIsNotTheOwner) {
  // A claim recorded for this very PID but another start time belongs to a
  // process that died and whose PID was reused by us.
  {
    std::ofstream out(ledger_path());
    out << "{\"schema_version\":1,\"next_id\":100,\"claims\":[{\"id\":99,\"pid\":" << getpid()
        << ",\"start_time\":1,\"uid\":0,\"cpus\":\"0-4095\",\"exclusive\":true,\"envelope\":false,"
           "\"numa_node\":0,\"memory_bytes\":0,\"label\":\"ghost\",\"created_unix\":0}]}";
  }
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(request(usable_cpus(), true, &res), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(read_text(ledger_path()).find("ghost"), std::string::npos);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(LedgerClaims, ClaimsFromBeforeARebootAreForgotten) {
  // A live-looking claim (this process, its real start time) in a ledger
  // written under another boot id: PID + start time repeat across boots.
  std::string stat = read_text("/proc/self/stat");
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::string start_time;
  for (int field = 3; field <= 22; ++field) rest >> start_time;
  {
    std::ofstream out(ledger_path());
    out << "{\"schema_version\":1,\"next_id\":100,\"boot_id\":\"00000000-old-boot\",\"claims\":[{\"id\":99,"
           "\"pid\":"
        << getpid() << ",\"start_time\":" << start_time
        << ",\"uid\":0,\"cpus\":\"0-4095\",\"exclusive\":true,\"envelope\":false,"
           "\"numa_node\":0,\"memory_bytes\":0,\"label\":\"before-reboot\",\"created_unix\":0}]}";
  }
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(request(usable_cpus(), true, &res), MLOS_OK) << mlos_last_error_message();
  const std::string after = read_text(ledger_path());
  EXPECT_EQ(after.find("before-reboot"), std::string::npos);
  EXPECT_NE(after.find(read_text("/proc/sys/kernel/random/boot_id").substr(0, 36)), std::string::npos);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(LedgerClaims, CorruptLedgerFailsAndChangesNothing) {
  const std::string garbage = "{\"schema_version\":1,\"next_id\":";  // torn by hand
  {
    std::ofstream out(ledger_path());
    out << garbage;
  }
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(request(1, false, &res), MLOS_ERR_STATE_CORRUPT);
  EXPECT_EQ(res, nullptr);
  EXPECT_NE(std::string(mlos_last_error_message()).find(ledger_path()), std::string::npos);
  EXPECT_NE(std::string(mlos_last_error_message()).find("move the file aside"), std::string::npos);
  EXPECT_EQ(read_text(ledger_path()), garbage);
  unlink(ledger_path().c_str());
  ASSERT_EQ(request(1, false, &res), MLOS_OK);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(LedgerClaims, ImpossibleRequestsFailWithClearCodesAndChangeNothing) {
  mlos_training_resources_t* res = nullptr;
  unlink(ledger_path().c_str());
  mlos_training_resource_request_t req = {.num_cpus = 4096, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INSUFFICIENT_CPUS);
  req.num_cpus = 1;
  req.numa_node_preference = 63;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INVALID_NUMA_NODE);
  req.numa_node_preference = -2;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INVALID_ARGUMENT);
  req.numa_node_preference = -1;
  req.memory_bytes = SIZE_MAX / 2;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INSUFFICIENT_MEMORY);
  req.memory_bytes = 0;
  req.num_cpus = 0;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INVALID_ARGUMENT);
  req.num_cpus = -3;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(res, nullptr);
  // No failed request left a claim behind.
  EXPECT_EQ(read_text(ledger_path()).find("\"pid\""), std::string::npos);
}

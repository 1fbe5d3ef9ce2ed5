// SPDX-License-Identifier: Apache-2.0
// GPU claims through the published C API (docs/api.md, "GPUs"): the
// options' num_gpus / gpu_uuids / MLOS_REQUEST_SHARED_GPUS,
// mlos_training_get_gpus, and the refusals, on the embedded engine with a
// private ledger and the fake NVML serving two GPUs. A caller compiled
// before the GPU fields (a smaller struct_size) claims none.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "mlos/errors.h"
#include "mlos/training.h"

namespace {

const char* const kA = "GPU-aaaaaaaa-1111-2222-3333-444444444444";
const char* const kB = "GPU-bbbbbbbb-1111-2222-3333-444444444444";

// The fixture files, once per process. The environment is set again before
// each test (the inventory tests in this binary change it), and before the
// library's first GPU request, which reads NVML once per process.
class FakeGpus : public ::testing::Environment {
 public:
  static void use() {
    setenv("MLOS_NVML_LIBRARY", MLOS_FAKE_NVML_LIBRARY, 1);
    setenv("MLOS_FAKE_NVML", (dir_ / "nvml.json").c_str(), 1);
    setenv("MLOS_RUNTIME_DIR", (dir_ / "runtime").c_str(), 1);
    setenv("MLOS_MODE", "embedded", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mlos-gpu-api-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_ / "runtime");
    std::ofstream(dir_ / "nvml.json") << R"({"gpus": [
      {"uuid": ")" << kA << R"(", "name": "NVIDIA H200", "memory_total": 17179869184, "memory_used": 0,
       "pci": {"domain": 0, "bus": 59, "device": 0}, "cpu_affinity": "0"},
      {"uuid": ")" << kB << R"(", "name": "NVIDIA H200", "memory_total": 17179869184, "memory_used": 0,
       "pci": {"domain": 0, "bus": 187, "device": 0}, "cpu_affinity": "0"}]})";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

 private:
  static inline std::filesystem::path dir_;
};
const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new FakeGpus);

class GpuRequestApiTest : public ::testing::Test {
 protected:
  void SetUp() override { FakeGpus::use(); }
};

mlos_training_resource_request_t one_cpu() {
  mlos_training_resource_request_t r{};
  r.num_cpus = 1;
  r.numa_node_preference = -1;
  return r;
}

mlos_training_request_options_t gpus(int n, const char* uuids = nullptr, uint32_t flags = 0) {
  mlos_training_request_options_t o{};
  o.struct_size = sizeof o;
  o.flags = flags;
  o.num_gpus = n;
  o.gpu_uuids = uuids;
  return o;
}

std::string gpus_of(mlos_training_resources_t* res) {
  char buf[256];
  size_t needed = 0;
  EXPECT_EQ(mlos_training_get_gpus(res, buf, sizeof buf, &needed), MLOS_OK);
  return buf;
}

TEST_F(GpuRequestApiTest, ExclusiveGpusAreGrantedOnceAndNamed) {
  const auto req = one_cpu();
  auto o = gpus(1);
  mlos_training_resources_t* first = nullptr;
  ASSERT_EQ(mlos_training_request_resources_ex(&req, &o, &first), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(gpus_of(first), kA);
  // The size query, and a buffer one byte short.
  size_t needed = 0;
  EXPECT_EQ(mlos_training_get_gpus(first, nullptr, 0, &needed), MLOS_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(needed, strlen(kA) + 1);
  char small[8];
  EXPECT_EQ(mlos_training_get_gpus(first, small, sizeof small, &needed), MLOS_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(mlos_training_get_gpus(first, nullptr, 4, &needed), MLOS_ERR_INVALID_ARGUMENT);

  auto both = gpus(2);
  mlos_training_resources_t* second = nullptr;
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &both, &second), MLOS_ERR_GPUS_BUSY);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(std::string(mlos_last_error_message()).find(kA), std::string::npos) << mlos_last_error_message();
  auto shared = gpus(0, kA, MLOS_REQUEST_SHARED_GPUS);  // never shared with an exclusive claim
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &shared, &second), MLOS_ERR_GPUS_BUSY);

  ASSERT_EQ(mlos_training_release_resources(first), MLOS_OK);
  ASSERT_EQ(mlos_training_request_resources_ex(&req, &both, &second), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(gpus_of(second), std::string(kA) + "," + kB);
  EXPECT_EQ(mlos_training_release_resources(second), MLOS_OK);
}

TEST_F(GpuRequestApiTest, SharedClaimsOverlapEachOther) {
  const auto req = one_cpu();
  auto o = gpus(0, "GPU-bbbb", MLOS_REQUEST_SHARED_GPUS);
  mlos_training_resources_t* a = nullptr;
  mlos_training_resources_t* b = nullptr;
  ASSERT_EQ(mlos_training_request_resources_ex(&req, &o, &a), MLOS_OK) << mlos_last_error_message();
  ASSERT_EQ(mlos_training_request_resources_ex(&req, &o, &b), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(gpus_of(a), kB);
  EXPECT_EQ(gpus_of(b), kB);
  auto excl = gpus(0, kB);
  mlos_training_resources_t* c = nullptr;
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &excl, &c), MLOS_ERR_GPUS_BUSY);
  EXPECT_EQ(mlos_training_release_resources(a), MLOS_OK);
  EXPECT_EQ(mlos_training_release_resources(b), MLOS_OK);
}

TEST_F(GpuRequestApiTest, ACallerFromBeforeTheGpuFieldsClaimsNone) {
  const auto req = one_cpu();
  auto o = gpus(2);  // what lies past a v1 caller's struct is never read
  o.struct_size = offsetof(mlos_training_request_options_t, label) + sizeof(const char*);
  mlos_training_resources_t* res = nullptr;
  ASSERT_EQ(mlos_training_request_resources_ex(&req, &o, &res), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(gpus_of(res), "");
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST_F(GpuRequestApiTest, BadGpuRequestsAreRefusedAndGrantNothing) {
  const auto req = one_cpu();
  mlos_training_resources_t* res = nullptr;
  auto negative = gpus(-1);
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &negative, &res), MLOS_ERR_INVALID_ARGUMENT);
  auto mismatch = gpus(2, kA);
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &mismatch, &res), MLOS_ERR_INVALID_ARGUMENT);
  auto unknown = gpus(0, "GPU-cccc");
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &unknown, &res), MLOS_ERR_NOT_FOUND);
  auto three = gpus(3);
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &three, &res), MLOS_ERR_INSUFFICIENT_GPUS);
  auto bad_flag = gpus(1, nullptr, 1u << 30);
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &bad_flag, &res), MLOS_ERR_INVALID_ARGUMENT);
  // CUDA_VISIBLE_DEVICES="" hides every GPU from CUDA, so from the claim too.
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  auto one = gpus(1);
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &one, &res), MLOS_ERR_INSUFFICIENT_GPUS);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  ASSERT_EQ(mlos_training_request_resources_ex(&req, &one, &res), MLOS_OK) << mlos_last_error_message();
  unsetenv("CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(gpus_of(res), kB);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

}  // namespace

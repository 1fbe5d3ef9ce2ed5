// SPDX-License-Identifier: Apache-2.0
// Job metrics in the Prometheus text format: exact series and values, series
// following jobs as they come and go, and promtool's verdict on the output.
#include "daemon/job_metrics.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <fstream>

namespace mlos::daemon {
namespace {

JobSample sample(uint64_t job, mlos_training_phase_t phase, double backward_seconds) {
  JobSample s;
  s.job_id = job;
  s.uid = 1000;
  s.cpus = 2;
  s.label = "train.py";
  s.phase = phase;
  s.phase_seconds[MLOS_TRAINING_PHASE_BACKWARD] = backward_seconds;
  s.phase_entries[MLOS_TRAINING_PHASE_BACKWARD] = 3;
  s.cpu_seconds = 12.5;
  s.memory_bytes = 1 << 20;
  s.memory_limit_bytes = 1 << 30;
  return s;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(JobMetricsTest, SeriesCarryTheSampledValues) {
  JobMetrics m;
  m.update({sample(3, MLOS_TRAINING_PHASE_BACKWARD, 2.5)});
  const std::string t = m.text();
  EXPECT_TRUE(has_line(t, "mlos_build_info{commit=\"unknown\",version=\"" MLOS_VERSION_STRING "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_info{exclusive=\"false\",job_id=\"3\",label=\"train.py\",pod_uid=\"\",slurm_job_id=\"\",uid=\"1000\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_cpus{job_id=\"3\",label=\"train.py\",uid=\"1000\"} 2")) << t;
  EXPECT_TRUE(has_line(t, "mlos_daemon_jobs 1")) << t;
  // No activity on the page (an older library): no activity series, rather than zeros.
  EXPECT_EQ(t.find("mlos_job_collective_calls_total{"), std::string::npos) << t;
  // Nothing that is not mlOS's: no exporter internals, no node-wide PSI (node_exporter's).
  EXPECT_EQ(t.find("exposer_"), std::string::npos) << t;
  EXPECT_EQ(t.find("mlos_node_"), std::string::npos) << t;
  // Never Prometheus' target label.
  EXPECT_EQ(t.find("{job="), std::string::npos) << t;
  EXPECT_EQ(t.find(",job="), std::string::npos) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase{job_id=\"3\",label=\"train.py\",phase=\"BACKWARD\",uid=\"1000\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase{job_id=\"3\",label=\"train.py\",phase=\"FORWARD\",uid=\"1000\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase_seconds_total{job_id=\"3\",label=\"train.py\",phase=\"BACKWARD\",uid=\"1000\"} 2.5")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase_transitions_total{job_id=\"3\",label=\"train.py\",phase=\"BACKWARD\",uid=\"1000\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_cpu_seconds_total{job_id=\"3\",label=\"train.py\",uid=\"1000\"} 12.5")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_memory_bytes{job_id=\"3\",label=\"train.py\",uid=\"1000\"} 1048576")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_memory_limit_bytes{job_id=\"3\",label=\"train.py\",uid=\"1000\"} 1073741824")) << t;
}

TEST(JobMetricsTest, ActivityAndClusterIdsBecomeSeries) {
  JobMetrics m("1a2b3c4");
  JobSample s = sample(5, MLOS_TRAINING_PHASE_FORWARD, 1);
  s.exclusive = true;
  s.pod_uid = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b";
  s.activity = PhaseSnapshot::Activity{4, 4096, 1500000000, 2, 1 << 20, 250000000};
  m.update({s});
  s.activity->collective_calls = 10;
  m.update({s});
  const std::string t = m.text();
  const std::string who = "{job_id=\"5\",label=\"train.py\",uid=\"1000\"}";
  EXPECT_TRUE(has_line(t, "mlos_build_info{commit=\"1a2b3c4\",version=\"" MLOS_VERSION_STRING "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_collective_calls_total" + who + " 10")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_collective_bytes_total" + who + " 4096")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_collective_seconds_total" + who + " 1.5")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_checkpoint_saves_total" + who + " 2")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_checkpoint_bytes_total" + who + " 1048576")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_checkpoint_seconds_total" + who + " 0.25")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_info{exclusive=\"true\",job_id=\"5\",label=\"train.py\","
                          "pod_uid=\"0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\",slurm_job_id=\"\",uid=\"1000\"} 1")) << t;
  // An info series that changes replaces the old one.
  s.exclusive = false;
  m.update({s});
  EXPECT_EQ(m.text().find("exclusive=\"true\""), std::string::npos) << m.text();
}

TEST(JobMetricsTest, TotalsAdvanceJobsComeAndGoAndRestartsStartFresh) {
  JobMetrics m;
  m.update({sample(3, MLOS_TRAINING_PHASE_BACKWARD, 2.5), sample(4, MLOS_TRAINING_PHASE_IDLE, 1)});
  m.update({sample(3, MLOS_TRAINING_PHASE_FORWARD, 4.0)});
  std::string t = m.text();
  EXPECT_TRUE(has_line(t, "mlos_job_phase_seconds_total{job_id=\"3\",label=\"train.py\",phase=\"BACKWARD\",uid=\"1000\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase{job_id=\"3\",label=\"train.py\",phase=\"FORWARD\",uid=\"1000\"} 1")) << t;
  EXPECT_EQ(t.find("job_id=\"4\""), std::string::npos) << "job 4 left, so did its series";
  // Same name, totals lower: a new job, whose series start from its values.
  m.update({sample(3, MLOS_TRAINING_PHASE_IDLE, 0.5)});
  t = m.text();
  EXPECT_TRUE(has_line(t, "mlos_job_phase_seconds_total{job_id=\"3\",label=\"train.py\",phase=\"BACKWARD\",uid=\"1000\"} 0.5")) << t;
}

TEST(JobMetricsTest, EachGpuAJobHoldsIsASeriesJoinableOnDcgmsUuid) {
  JobMetrics m;
  JobSample s = sample(4, MLOS_TRAINING_PHASE_FORWARD, 0);
  s.gpus = {"GPU-a", "GPU-b"};
  s.gpus_exclusive = true;
  m.update({s});
  std::string t = m.text();
  const std::string a = R"(mlos_job_gpu_info{UUID="GPU-a",exclusive="true",job_id="4",label="train.py",uid="1000"} 1)";
  EXPECT_TRUE(has_line(t, a)) << t;
  EXPECT_NE(t.find(R"(UUID="GPU-b",exclusive="true")"), std::string::npos) << t;
  // Booked as shared later, and one GPU fewer: the series follow.
  s.gpus = {"GPU-b"};
  s.gpus_exclusive = false;
  m.update({s});
  t = m.text();
  EXPECT_EQ(t.find("GPU-a"), std::string::npos) << t;
  EXPECT_TRUE(has_line(t, R"(mlos_job_gpu_info{UUID="GPU-b",exclusive="false",job_id="4",label="train.py",uid="1000"} 1)"))
      << t;
  m.update({});  // the job ended
  EXPECT_EQ(m.text().find("mlos_job_gpu_info{"), std::string::npos) << m.text();
}

TEST(JobMetricsTest, PromtoolAcceptsTheOutput) {
  FILE* which = popen("command -v promtool", "r");
  char path[256] = {};
  const bool found = which && fgets(path, sizeof path, which) != nullptr;
  if (which) pclose(which);
  if (!found) GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup.sh installs it)";
  JobMetrics m;
  m.update({sample(3, MLOS_TRAINING_PHASE_BACKWARD, 2.5), sample(9, MLOS_TRAINING_PHASE_CHECKPOINT, 0)});
  const std::string file = testing::TempDir() + "/mlos_metrics.prom";
  std::ofstream(file) << m.text();
  FILE* check = popen(("promtool check metrics < " + file + " 2>&1").c_str(), "r");
  ASSERT_NE(check, nullptr);
  std::string out;
  for (char buf[512]; fgets(buf, sizeof buf, check);) out += buf;
  const int status = pclose(check);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(out, "") << "promtool reported problems";
}

}  // namespace
}  // namespace mlos::daemon

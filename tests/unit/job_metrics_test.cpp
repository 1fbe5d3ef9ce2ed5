// Job metrics in the Prometheus text format: exact series and values, series
// following jobs as they come and go, and promtool's verdict on the output.
#include "daemon/job_metrics.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <fstream>

namespace mlos::daemon {
namespace {

JobSample sample(const std::string& job, mlos_training_phase_t phase, double backward_seconds) {
  JobSample s;
  s.job = job;
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
  m.update({sample("job-3", MLOS_TRAINING_PHASE_BACKWARD, 2.5)});
  const std::string t = m.text();
  EXPECT_TRUE(has_line(t, "mlos_build_info{version=\"" MLOS_VERSION_STRING "\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase{job=\"job-3\",label=\"train.py\",phase=\"BACKWARD\"} 1")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase{job=\"job-3\",label=\"train.py\",phase=\"FORWARD\"} 0")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase_seconds_total{job=\"job-3\",phase=\"BACKWARD\"} 2.5")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase_transitions_total{job=\"job-3\",phase=\"BACKWARD\"} 3")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_cpu_seconds_total{job=\"job-3\"} 12.5")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_memory_bytes{job=\"job-3\"} 1048576")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_memory_limit_bytes{job=\"job-3\"} 1073741824")) << t;
}

TEST(JobMetricsTest, TotalsAdvanceJobsComeAndGoAndRestartsStartFresh) {
  JobMetrics m;
  m.update({sample("job-3", MLOS_TRAINING_PHASE_BACKWARD, 2.5), sample("job-4", MLOS_TRAINING_PHASE_IDLE, 1)});
  m.update({sample("job-3", MLOS_TRAINING_PHASE_FORWARD, 4.0)});
  std::string t = m.text();
  EXPECT_TRUE(has_line(t, "mlos_job_phase_seconds_total{job=\"job-3\",phase=\"BACKWARD\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "mlos_job_phase{job=\"job-3\",label=\"train.py\",phase=\"FORWARD\"} 1")) << t;
  EXPECT_EQ(t.find("job-4"), std::string::npos) << "job-4 left, so did its series";
  // Same name, totals lower: a new job, whose series start from its values.
  m.update({sample("job-3", MLOS_TRAINING_PHASE_IDLE, 0.5)});
  t = m.text();
  EXPECT_TRUE(has_line(t, "mlos_job_phase_seconds_total{job=\"job-3\",phase=\"BACKWARD\"} 0.5")) << t;
}

TEST(JobMetricsTest, PromtoolAcceptsTheOutput) {
  FILE* which = popen("command -v promtool", "r");
  char path[256] = {};
  const bool found = which && fgets(path, sizeof path, which) != nullptr;
  if (which) pclose(which);
  if (!found) GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/setup.sh installs it)";
  JobMetrics m;
  m.update({sample("job-3", MLOS_TRAINING_PHASE_BACKWARD, 2.5), sample("job-9", MLOS_TRAINING_PHASE_CHECKPOINT, 0)});
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

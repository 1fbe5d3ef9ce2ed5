// SPDX-License-Identifier: Apache-2.0
// A job's label on mlosd's text outputs (red-team finding 9, issue 47): the
// stderr log (one event is one line, no raw control byte) and the
// Prometheus label values (no ESC or other control passes raw). The
// journal path carries the label as a field, framed, and is not tested
// here.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "daemon/job_metrics.h"
#include "fakes/raw_controls.h"
#include "os/journal_log.h"

namespace mlos {
namespace {

using mlos_test::raw_controls;

const std::string kForgedLine = "train\nmlosd: error: forged";
const std::string kTitle = "\x1b]0;title\x07";
const std::string kClipboard = "\x1b]52;c;cm0gLXJmIH4=\x07";

// What `write` puts on file descriptor 2, read back from a temporary file.
template <typename Write>
std::string captured_stderr(Write write) {
  FILE* file = std::tmpfile();
  if (file == nullptr) return "tmpfile failed";
  const int saved = dup(STDERR_FILENO);
  dup2(fileno(file), STDERR_FILENO);
  write();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  std::rewind(file);
  for (int c; (c = std::fgetc(file)) != EOF;) out += static_cast<char>(c);
  std::fclose(file);
  return out;
}

TEST(LabelOutputTest, AStderrLogEventIsOneLineWithItsLabelsControlsEscaped) {
  os::JournalLog log("mlosd", /*use_journal=*/false);
  for (const std::string& label : {kForgedLine, kTitle, kClipboard}) {
    const std::string out = captured_stderr([&] {
      log.write(MLOS_LOG_INFO, "granted job 7 (" + label + ")", {{"JOB_ID", "7"}, {"LABEL", label}});
    });
    EXPECT_EQ(raw_controls(out), "") << out;
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.find('\n'), out.size() - 1) << out;  // one line, ended once
    EXPECT_EQ(out.rfind("mlosd: info: granted job 7 (", 0), 0u) << out;
  }
  const std::string out = captured_stderr([&] { log.write(MLOS_LOG_INFO, "granted", {{"LABEL", kTitle}}); });
  EXPECT_EQ(out, "mlosd: info: granted [LABEL=\\x1b]0;title\\x07]\n");
}

TEST(LabelOutputTest, PrometheusLabelValuesCarryNoRawControlCharacter) {
  for (const std::string& label : {kForgedLine, kTitle, kClipboard, std::string("\xc2\x9b" "31m")}) {
    daemon::JobMetrics m;
    daemon::JobSample s;
    s.job_id = 7;
    s.uid = 1000;
    s.label = label;
    s.slurm_job_id = "12\x1b[2J";  // from the job's environment: the user's too
    m.update({s});
    m.update({s});  // the same job: its series stay, not restarted
    const std::string t = m.text();
    EXPECT_EQ(raw_controls(t), "") << t;
    EXPECT_NE(t.find("mlos_job_cpus{job_id=\"7\",label=\""), std::string::npos) << t;
  }
  daemon::JobMetrics m;
  daemon::JobSample s;
  s.job_id = 7;
  s.label = kTitle;
  m.update({s});
  // ESC as the text \x1b, which the exposition format then writes with its
  // backslash escaped: the value Prometheus stores reads \x1b]0;title\x07.
  EXPECT_NE(m.text().find("label=\"\\\\x1b]0;title\\\\x07\""), std::string::npos) << m.text();
}

}  // namespace
}  // namespace mlos

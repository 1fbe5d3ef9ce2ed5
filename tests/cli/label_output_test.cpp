// SPDX-License-Identifier: Apache-2.0
// A job's label in the CLI's text output (red-team finding 9, issue 47):
// `mlos status` and `mlos top -b` must not pass a label's control
// characters to the terminal (a forged line, a terminal title, an OSC 52
// clipboard write), while --json keeps the label exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "daemon_view.h"
#include "fakes/raw_controls.h"
#include "top_view.h"

namespace mlos::cli {
namespace {

using mlos_test::raw_controls;
using nlohmann::json;

// The three attacks of the finding, one label each.
const std::string kForgedLine = "train\nmlosd: error: forged";
const std::string kTitle = "\x1b]0;title\x07";
const std::string kClipboard = "\x1b]52;c;cm0gLXJmIH4=\x07";

json reply_with_label(const std::string& label) {
  json job{{"job", 7}, {"label", label}, {"pid", 4242}, {"uid", 1000}, {"cpus", "0-1"}, {"phase", "FORWARD"}};
  return json{{"daemon", {{"version", "0.1.0"}, {"pid", 1}}}, {"cpus", "0-3"}, {"exclusive_cpus", ""},
              {"shared_pool", "0-3"}, {"jobs", json::array({job})}};
}

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

TEST(LabelOutputTest, StatusTextPrintsNoControlCharacterOfALabel) {
  const size_t plain = lines(daemon_status_text(reply_with_label("train"), "/run/mlos/mlosd.sock"));
  for (const std::string& label : {kForgedLine, kTitle, kClipboard, std::string("\xc2\x9b" "31m")}) {
    const std::string text = daemon_status_text(reply_with_label(label), "/run/mlos/mlosd.sock");
    EXPECT_EQ(raw_controls(text), "") << text;
    EXPECT_EQ(lines(text), plain) << text;  // the job is one row: no line forged
  }
  EXPECT_NE(daemon_status_text(reply_with_label(kTitle), "s").find("\\x1b]0;title"), std::string::npos);
}

TEST(LabelOutputTest, TopBatchPrintsNoControlCharacterOfALabel) {
  const size_t plain = lines(render_top(reply_with_label("train"), {}, "12:00:00"));
  for (const std::string& label : {kForgedLine, kTitle, kClipboard, std::string("\xc2\x9b" "31m")}) {
    const std::string text = render_top(reply_with_label(label), {}, "12:00:00");
    EXPECT_EQ(raw_controls(text), "") << text;
    EXPECT_EQ(lines(text), plain) << text;
  }
  EXPECT_NE(render_top(reply_with_label(kForgedLine), {}, "t").find("train\\nmlosd: e"), std::string::npos);
}

TEST(LabelOutputTest, StatusJsonKeepsTheLabelExact) {
  const json j = daemon_status_json(reply_with_label(kClipboard), "s");
  EXPECT_EQ(j["jobs"][0]["label"], kClipboard);
}

}  // namespace
}  // namespace mlos::cli

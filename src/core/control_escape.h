/* SPDX-License-Identifier: Apache-2.0 */
// Text from outside (a job's label, set by the user who asked for the job)
// made safe to print on a terminal or in a one-line log record.
//
// Why: a label is any UTF-8 string the requesting user chose. Printed raw,
// "\n" forges log lines, and ESC or C1 sequences drive the reader's
// terminal (its title, colours, OSC 52 clipboard writes) when they run
// `mlos status` or read the log (red-team finding 9, issue 47). Every text
// output of such strings goes through escape_controls: mlosd's stderr log,
// `mlos status`, `mlos top -b` and the Prometheus label values. JSON output
// does not: JSON escapes control characters itself and stays exact.
#pragma once

#include <string>
#include <string_view>

namespace mlos {

// `text` with no control character left raw:
//   - \n, \r, \t become the two characters "\n", "\r", "\t";
//   - other C0 controls (U+0000-U+001F) and DEL become "\xHH" (ESC: "\x1b");
//   - C1 controls (U+0080-U+009F, which some terminals obey as ESC
//     sequences: U+009B is CSI) become "\u00HH";
//   - bytes that are not well-formed UTF-8 become "\xHH" (a lone 0x9B is
//     CSI to a terminal in an 8-bit mode).
// Everything else, other UTF-8 characters included, passes unchanged, and
// so does '\' itself: the result is for reading, not for parsing back (a
// label "a\nb" typed with a backslash reads the same as one with a newline;
// the JSON output tells them apart).
std::string escape_controls(std::string_view text);

}  // namespace mlos

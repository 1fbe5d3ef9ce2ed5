/* SPDX-License-Identifier: Apache-2.0 */
// What a key does in `mlos top`'s interactive view, without the terminal:
// the screen (top_screen.cpp) turns ncurses key codes into KeyPress, this
// changes the model and says what the screen must do next. Tested in
// tests/cli/top_keys_test.cpp.
#pragma once

#include <string>

#include "top_model.h"

namespace mlos::cli {

// A key's meaning outside the filter prompt. `text` is the printable
// character the key types (0 for none), which is what counts while the
// filter is being typed: there `q` or `s` are letters of the filter.
enum class TopKey {
  kQuit, kSortNext, kSortPrev, kFilter, kEscape, kHelp, kRefresh, kEnter, kBackspace, kResize,
  kUp, kDown, kPageUp, kPageDown, kHome, kEnd, kOther
};
struct KeyPress {
  TopKey key = TopKey::kOther;
  char text = 0;
};

enum class TopAction { kNone, kQuit, kRefresh };

// The view's modes: the help page, the filter prompt (the filter applies
// as it is typed; Enter keeps it, Esc drops it), or the job list, which
// scrolls (arrows one row, PgUp/PgDn a page, Home/End) when it has more
// rows than the window shows.
class TopInput {
 public:
  TopAction handle(const KeyPress& key, TopModel& model);
  bool help() const { return help_; }
  bool editing() const { return editing_; }

  // The index of the first row shown. The screen calls fit_scroll with
  // the rows it has and the number it can show before drawing them: the
  // first row then lies in [0, rows - shown], so End shows the last page
  // and a shorter list (a filter, jobs ending) never leaves the view
  // scrolled past its end.
  int scroll() const { return scroll_; }
  void fit_scroll(int rows, int shown);

 private:
  bool help_ = false;
  bool editing_ = false;
  int scroll_ = 0;
  int page_ = 1;  // rows shown at the last fit_scroll
};

}  // namespace mlos::cli

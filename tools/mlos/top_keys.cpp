// SPDX-License-Identifier: Apache-2.0
#include "top_keys.h"

#include <algorithm>
#include <climits>

namespace mlos::cli {

void TopInput::fit_scroll(int rows, int shown) {
  page_ = std::max(1, shown);
  scroll_ = std::clamp(scroll_, 0, std::max(0, rows - page_));
}

TopAction TopInput::handle(const KeyPress& key, TopModel& model) {
  if (key.key == TopKey::kResize) return TopAction::kNone;
  if (help_) {  // any key closes the help page, and does nothing else
    help_ = false;
    return TopAction::kNone;
  }
  if (editing_) {
    switch (key.key) {
      case TopKey::kEnter: editing_ = false; return TopAction::kNone;
      case TopKey::kEscape:
        editing_ = false;
        model.set_filter("");
        return TopAction::kNone;
      case TopKey::kBackspace: {
        std::string f = model.filter();
        if (!f.empty()) f.pop_back();
        model.set_filter(f);
        return TopAction::kNone;
      }
      default:
        if (key.text >= 0x20 && key.text != 0x7f) {
          model.set_filter(model.filter() + key.text);
          return TopAction::kNone;
        }
        // A function key (F10) keeps its meaning; other keys are ignored.
        return key.key == TopKey::kQuit ? TopAction::kQuit : TopAction::kNone;
    }
  }
  switch (key.key) {
    case TopKey::kQuit: return TopAction::kQuit;
    case TopKey::kSortNext: model.cycle_sort(1); return TopAction::kNone;
    case TopKey::kSortPrev: model.cycle_sort(-1); return TopAction::kNone;
    case TopKey::kFilter: editing_ = true; return TopAction::kNone;
    case TopKey::kEscape: model.set_filter(""); return TopAction::kNone;
    case TopKey::kHelp: help_ = true; return TopAction::kNone;
    case TopKey::kRefresh: return TopAction::kRefresh;
    // Past either end for now; fit_scroll brings it back before drawing.
    case TopKey::kUp: scroll_ = std::max(0, scroll_ - 1); return TopAction::kNone;
    case TopKey::kDown: scroll_ += 1; return TopAction::kNone;
    case TopKey::kPageUp: scroll_ = std::max(0, scroll_ - page_); return TopAction::kNone;
    case TopKey::kPageDown: scroll_ += page_; return TopAction::kNone;
    case TopKey::kHome: scroll_ = 0; return TopAction::kNone;
    case TopKey::kEnd: scroll_ = INT_MAX / 2; return TopAction::kNone;
    default: return TopAction::kNone;
  }
}

}  // namespace mlos::cli

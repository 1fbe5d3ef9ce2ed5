#include "top_keys.h"

namespace mlos::cli {

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
    default: return TopAction::kNone;
  }
}

}  // namespace mlos::cli

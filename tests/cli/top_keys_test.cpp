// What each key does in mlos top's interactive view (tools/mlos/top_keys.h).
#include "top_keys.h"

#include <gtest/gtest.h>

namespace mlos::cli {
namespace {

KeyPress text(char c, TopKey meaning = TopKey::kOther) { return {meaning, c}; }

TEST(TopInputTest, ListKeysQuitSortFilterAndRefresh) {
  TopModel m;
  TopInput in;
  EXPECT_EQ(in.handle({TopKey::kSortNext, 's'}, m), TopAction::kNone);
  EXPECT_EQ(m.sort(), SortColumn::kMemory);
  EXPECT_EQ(in.handle({TopKey::kSortPrev, '<'}, m), TopAction::kNone);
  EXPECT_EQ(m.sort(), SortColumn::kCpuPercent);
  EXPECT_EQ(in.handle({TopKey::kRefresh, ' '}, m), TopAction::kRefresh);
  EXPECT_EQ(in.handle({TopKey::kQuit, 'q'}, m), TopAction::kQuit);
  EXPECT_EQ(in.handle({TopKey::kQuit, 0}, m), TopAction::kQuit);  // F10
  EXPECT_EQ(in.handle({TopKey::kResize, 0}, m), TopAction::kNone);
}

TEST(TopInputTest, FilterIsTypedLiveKeptByEnterAndClearedByEscape) {
  TopModel m;
  TopInput in;
  in.handle({TopKey::kFilter, '/'}, m);
  EXPECT_TRUE(in.editing());
  // Letters that are keys elsewhere are text here.
  for (char c : std::string("qs x")) {
    const TopKey meaning = c == 'q'   ? TopKey::kQuit
                           : c == 's' ? TopKey::kSortNext
                           : c == ' ' ? TopKey::kRefresh
                                      : TopKey::kOther;
    EXPECT_EQ(in.handle(text(c, meaning), m), TopAction::kNone);
  }
  EXPECT_EQ(m.filter(), "qs x");
  EXPECT_EQ(m.sort(), SortColumn::kCpuPercent);
  in.handle({TopKey::kBackspace, 0}, m);
  EXPECT_EQ(m.filter(), "qs ");
  in.handle({TopKey::kEnter, 0}, m);
  EXPECT_FALSE(in.editing());
  EXPECT_EQ(m.filter(), "qs ");
  // Esc in the list clears a kept filter.
  in.handle({TopKey::kEscape, 0}, m);
  EXPECT_EQ(m.filter(), "");
  // Esc while typing drops what was typed.
  in.handle({TopKey::kFilter, 0}, m);  // F4
  in.handle(text('a'), m);
  in.handle({TopKey::kEscape, 0}, m);
  EXPECT_FALSE(in.editing());
  EXPECT_EQ(m.filter(), "");
  // F10 still quits from the prompt.
  in.handle({TopKey::kFilter, '/'}, m);
  EXPECT_EQ(in.handle({TopKey::kQuit, 0}, m), TopAction::kQuit);
}

TEST(TopInputTest, HelpIsClosedByAnyKeyWhichDoesNothingElse) {
  TopModel m;
  TopInput in;
  in.handle({TopKey::kHelp, 'h'}, m);
  EXPECT_TRUE(in.help());
  EXPECT_EQ(in.handle({TopKey::kResize, 0}, m), TopAction::kNone);
  EXPECT_TRUE(in.help());  // a resize only redraws it
  EXPECT_EQ(in.handle({TopKey::kQuit, 'q'}, m), TopAction::kNone);
  EXPECT_FALSE(in.help());
  EXPECT_EQ(in.handle({TopKey::kQuit, 'q'}, m), TopAction::kQuit);
}

}  // namespace
}  // namespace mlos::cli

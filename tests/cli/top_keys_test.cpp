// SPDX-License-Identifier: Apache-2.0
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

TEST(TopInputTest, ScrollStaysWithinTheRowsTheScreenFits) {
  TopModel m;
  TopInput in;
  in.fit_scroll(10, 4);  // ten rows, four shown: the first row is 0..6
  in.handle({TopKey::kUp, 0}, m);
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 0) << "not above the first row";
  in.handle({TopKey::kDown, 'j'}, m);
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 1);
  in.handle({TopKey::kPageDown, 0}, m);  // a page is the rows shown
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 5);
  in.handle({TopKey::kPageDown, 0}, m);
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 6) << "the last page, not past it";
  for (int i = 0; i < 5; ++i) in.handle({TopKey::kDown, 0}, m);
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 6);
  in.handle({TopKey::kUp, 'k'}, m);  // one up from the end, at once
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 5);
  in.handle({TopKey::kHome, 0}, m);
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 0);
  in.handle({TopKey::kEnd, 0}, m);
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 6);
  in.fit_scroll(3, 4);  // the list shrank (a filter): all of it is shown
  EXPECT_EQ(in.scroll(), 0);
  in.handle({TopKey::kPageUp, 0}, m);
  in.fit_scroll(3, 4);
  EXPECT_EQ(in.scroll(), 0);
}

TEST(TopInputTest, ScrollKeysAreLettersOfTheFilter) {
  TopModel m;
  TopInput in;
  in.fit_scroll(10, 4);
  in.handle({TopKey::kFilter, '/'}, m);
  in.handle({TopKey::kDown, 'j'}, m);
  in.handle({TopKey::kUp, 'k'}, m);
  in.handle({TopKey::kDown, 0}, m);  // the arrow key types nothing
  EXPECT_EQ(m.filter(), "jk");
  in.fit_scroll(10, 4);
  EXPECT_EQ(in.scroll(), 0);
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

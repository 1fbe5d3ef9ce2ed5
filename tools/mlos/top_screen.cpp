// SPDX-License-Identifier: Apache-2.0
#include "top_screen.h"

#include <algorithm>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "cli_output.h"
#include "daemon_view.h"
#include "top_clock.h"
#include "top_keys.h"

// Functions, not curses's macros (clear(), erase(), refresh() ...), and
// after every C++ header, which use those names too.
#define NCURSES_NOMACROS
#include <curses.h>

namespace mlos::cli {

namespace {

// Colour pairs. Every colour has a meaning that is also written as text
// (the job's letter, the phase letters, the pressure word), so the view
// reads the same on a terminal without colours or with NO_COLOR set.
constexpr short kPairJob = 1;       // .. kPairJob + kJobColours - 1
constexpr short kPairMeter = 7;
constexpr short kPairPhase = 8;     // .. kPairPhase + 5, in kTopPhases order
constexpr short kPairPressure = 14; // normal, moderate, critical
constexpr short kPairError = 17;

class Palette {
 public:
  void start() {
    if (!has_colors() || std::getenv("NO_COLOR") != nullptr) return;
    if (start_color() != OK) return;
    use_default_colors();
    const short jobs[kJobColours] = {COLOR_CYAN, COLOR_GREEN, COLOR_MAGENTA, COLOR_YELLOW, COLOR_BLUE, COLOR_RED};
    for (short i = 0; i < kJobColours; ++i) init_pair(static_cast<short>(kPairJob + i), jobs[i], -1);
    init_pair(kPairMeter, COLOR_GREEN, -1);
    const short phases[6] = {COLOR_WHITE, COLOR_YELLOW, COLOR_GREEN, COLOR_CYAN, COLOR_MAGENTA, COLOR_BLUE};
    for (short i = 0; i < 6; ++i) init_pair(static_cast<short>(kPairPhase + i), phases[i], -1);
    init_pair(kPairPressure + 0, COLOR_GREEN, -1);
    init_pair(kPairPressure + 1, COLOR_YELLOW, -1);
    init_pair(kPairPressure + 2, COLOR_RED, -1);
    init_pair(kPairError, COLOR_RED, -1);
    on_ = true;
  }
  attr_t pair(short n) const { return on_ ? COLOR_PAIR(n) : A_NORMAL; }
  attr_t job(int colour) const { return colour < 0 ? A_BOLD : (pair(static_cast<short>(kPairJob + colour)) | A_BOLD); }

 private:
  bool on_ = false;
};

// Text at (y, x), cut at the right edge (never wrapped).
void put(int y, int x, const std::string& text, attr_t attr = A_NORMAL) {
  if (y < 0 || y >= LINES || x >= COLS) return;
  attron(attr);
  mvaddnstr(y, x, text.c_str(), std::min<int>(static_cast<int>(text.size()), COLS - x));
  attroff(attr);
}

std::string pad(const std::string& text, int width, bool right) {
  std::string t = fit(text, static_cast<size_t>(std::max(1, width)));
  std::string spaces(static_cast<size_t>(std::max(0, width - static_cast<int>(t.size()))), ' ');
  return right ? spaces + t : t + spaces;
}

std::string percent(std::optional<double> v) {
  if (!v) return "-";
  char buf[16];
  snprintf(buf, sizeof buf, "%.1f", *v);
  return buf;
}

std::string memory_text(const TopJobRow& r) {
  if (!r.memory_used && r.memory_limit == 0) return "-";
  return (r.memory_used ? human_bytes(*r.memory_used) : std::string("-")) + "/" +
         (r.memory_limit ? human_bytes(r.memory_limit) : std::string("-"));
}

struct Column {
  const char* title;
  int width;
  bool right;
  int sort;  // SortColumn, -1 for none
};
// PHASES, the last column, takes what is left of the line.
constexpr Column kColumns[] = {
    {"JOB", 5, true, static_cast<int>(SortColumn::kJob)},
    {"M", 1, false, -1},
    {"LABEL", 16, false, static_cast<int>(SortColumn::kLabel)},
    {"PID", 7, true, -1},
    {"CPUS", 10, false, -1},
    {"PHASE", 12, false, static_cast<int>(SortColumn::kPhase)},
    {"CPU%", 6, true, static_cast<int>(SortColumn::kCpuPercent)},
    {"MEM", 19, false, static_cast<int>(SortColumn::kMemory)},
    {"GPUS", 8, false, -1},
    {"GPU-USE", 14, false, -1},
    {"PRESSURE", 8, false, static_cast<int>(SortColumn::kPressure)},
    {"PHASES", 0, false, -1},
};
constexpr int kMinBar = 6;

class Screen {
 public:
  Screen(const TopScreenOptions& options, const Palette& palette) : options_(options), palette_(palette) {}

  // Not const: the job list fits the input's scroll to what it shows.
  void draw(const TopModel& model, TopInput& input) {
    erase();
    if (input.help()) {
      draw_help();
    } else {
      int y = draw_header(model);
      y = draw_meters(model, y);
      y = draw_summary(model, y);
      draw_jobs(model, input, y + 1);
      draw_footer(model, input);
    }
    refresh();
  }

 private:
  int draw_header(const TopModel& model) {
    const auto& reply = model.reply();
    const auto& d = reply.contains("daemon") ? reply["daemon"] : nlohmann::json::object();
    std::string line = "mlos top - " + wall_clock();
    if (model.unavailable().empty()) {
      const long long clients = static_cast<long long>(json_number(d, "clients").value_or(0));
      line += "  mlosd " + json_text(d, "version") + " (pid " + json_text(d, "pid") + "), up " +
              human_duration(json_number(d, "uptime_seconds").value_or(0)) + ", " + std::to_string(clients) +
              (clients == 1 ? " client" : " clients") + ", cgroups " + json_text(reply, "cgroups");
    } else {
      line += "  mlosd unavailable at " + options_.socket;
    }
    put(0, 0, line, A_BOLD);
    return 1;
  }

  // Column-major, like htop: CPU 0.. down the first column. At most
  // half of the rows below the header go to meters; CPUs beyond them are
  // counted on the summary line.
  int draw_meters(const TopModel& model, int y) {
    const auto meters = model.meters();
    hidden_cpus_ = 0;
    if (meters.empty()) return y;
    const int n = static_cast<int>(meters.size());
    const int ncol = std::max(1, std::min(n, COLS / 26));
    const int cell = std::max(16, COLS / ncol);
    int nrows = (n + ncol - 1) / ncol;
    const int max_rows = std::max(1, (LINES - 6) / 2);
    if (nrows > max_rows) {
      hidden_cpus_ = n - max_rows * ncol;
      nrows = max_rows;
    }
    const int bar = cell - 15;
    for (int i = 0; i < n && i < nrows * ncol; ++i) {
      const CpuMeter& m = meters[static_cast<size_t>(i)];
      const int row = y + i % nrows;
      int x = (i / nrows) * cell;
      char num[16];
      snprintf(num, sizeof num, "%4d", m.cpu);
      put(row, x, num);
      x += 4;
      put(row, x, std::string(1, m.mark), m.mark == ' ' ? A_NORMAL : palette_.job(m.colour));
      x += 1;
      put(row, x, "[", m.exclusive ? A_BOLD : A_NORMAL);
      x += 1;
      put(row, x, meter_bar(m.busy, bar), palette_.pair(kPairMeter));
      x += bar;
      char pct[16];
      if (m.busy) snprintf(pct, sizeof pct, "%5.1f%%", *m.busy);
      else snprintf(pct, sizeof pct, "%6s", "-");
      put(row, x, pct);
      x += 6;
      put(row, x, "]", m.exclusive ? A_BOLD : A_NORMAL);
    }
    return y + nrows;
  }

  int draw_summary(const TopModel& model, int y) {
    const auto& reply = model.reply();
    std::string line;
    if (model.unavailable().empty()) {
      line = "CPUs " + json_text(reply, "cpus") + "  shared pool " + json_text(reply, "shared_pool") +
             "  exclusive " + json_text(reply, "exclusive_cpus");
      if (hidden_cpus_ > 0) line += " (" + std::to_string(hidden_cpus_) + " CPUs without a meter: enlarge the window)";
      line += "  jobs " + std::to_string(model.total_jobs());
    }
    line += std::string(line.empty() ? "" : "  ") + "sort " + sort_column_title(model.sort());
    if (!model.filter().empty()) line += "  filter \"" + model.filter() + "\"";
    put(y, 0, line);
    return y + 1;
  }

  void draw_jobs(const TopModel& model, TopInput& input, int y) {
    std::string header;
    std::vector<std::pair<int, std::string>> titles;  // x, title of the sort column
    for (const auto& c : kColumns) {
      const int x = static_cast<int>(header.size());
      const std::string cell = c.width ? pad(c.title, c.width, c.right) : std::string(c.title);
      if (c.sort == static_cast<int>(model.sort())) titles.emplace_back(x, cell);
      header += cell + (c.width ? " " : "");
    }
    header.resize(static_cast<size_t>(std::max<int>(COLS, static_cast<int>(header.size()))), ' ');
    put(y, 0, header, A_REVERSE);
    for (const auto& [x, title] : titles) put(y, x, title, A_REVERSE | A_BOLD | A_UNDERLINE);
    const int last = LINES - 2;  // the footer's line is LINES - 1
    int fixed = 0;
    for (const auto& c : kColumns) fixed += c.width ? c.width + 1 : 0;
    const int bar = std::max(kMinBar, COLS - fixed);
    const auto rows = model.rows();
    const int total = static_cast<int>(rows.size());
    // Lines y+1..last hold rows; when not all fit, the last of them says
    // which rows are shown (unless there is room for one row only).
    const int room = std::max(0, last - y);
    const int capacity = total > room ? std::max(std::min(room, 1), room - 1) : room;
    input.fit_scroll(total, capacity);
    const int first = input.scroll();
    const int shown = std::min(capacity, total - first);
    for (int i = 0; i < shown; ++i) {
      const TopJobRow& r = rows[static_cast<size_t>(first + i)];
      const int row = y + 1 + i;
      const std::string cells[] = {std::to_string(r.job), std::string(1, r.mark), r.label, r.pid, r.cpus_text,
                                   r.phase, percent(r.cpu_percent), memory_text(r), r.gpus, r.gpu_use,
                                   pressure_name(r.pressure)};
      constexpr size_t kPressureCell = 10;
      int x = 0;
      for (size_t i = 0; i < std::size(cells); ++i) {
        const Column& c = kColumns[i];
        attr_t attr = A_NORMAL;
        if (i == 1) attr = palette_.job(r.colour);
        if (i == kPressureCell && r.pressure >= 0 && r.pressure <= 2) {
          attr = palette_.pair(static_cast<short>(kPairPressure + r.pressure)) | (r.pressure == 2 ? A_BOLD : 0);
        }
        put(row, x, pad(cells[i], c.width, c.right), attr);
        x += c.width + 1;
      }
      const std::string letters = phase_bar(r.phase_share, bar);
      for (size_t i = 0; i < letters.size() && x < COLS; ++i, ++x) {
        attr_t attr = A_NORMAL;
        for (size_t p = 0; p < kTopPhases.size(); ++p) {
          if (kTopPhases[p].letter == letters[i]) attr = palette_.pair(static_cast<short>(kPairPhase + p));
        }
        put(row, x, std::string(1, letters[i]), attr);
      }
    }
    if (total > shown && shown < room) {
      put(y + 1 + shown, 0,
          "(jobs " + (shown > 0 ? std::to_string(first + 1) + "-" + std::to_string(first + shown) : std::string("none")) +
              " of " + std::to_string(total) + ": Up/Down, PgUp/PgDn, Home/End scroll; / filters)",
          A_DIM);
    }
    if (rows.empty() && model.unavailable().empty()) {
      put(y + 1, 0, model.total_jobs() == 0 ? "no jobs" : "no job's label contains \"" + model.filter() + "\"", A_DIM);
    }
  }

  void draw_footer(const TopModel& model, const TopInput& input) {
    const int y = LINES - 1;
    if (input.editing()) {
      put(y, 0, "Filter by label: " + model.filter() + "_   (Enter: keep, Esc: clear)", A_BOLD);
    } else if (!model.unavailable().empty()) {
      char every[32];
      snprintf(every, sizeof every, "%.1f", options_.interval);
      put(y, 0, model.unavailable() + "; retrying every " + every + " s (q quits)",
          palette_.pair(kPairError) | A_BOLD);
    } else {
      put(y, 0, "h Help  / Filter  Esc Clear  s Sort (< >)  space Refresh  q Quit", A_REVERSE);
    }
  }

  void draw_help() {
    const char* lines[] = {
        "mlos top: mlosd's jobs and this node's CPUs",
        "",
        "  q, F10          quit",
        "  s, F6, >        sort by the next column (CPU%, MEM, JOB, LABEL, PHASE, PRESSURE)",
        "  <               sort by the previous column",
        "  /, F4           filter jobs by label (as you type; Enter keeps it, Esc clears it)",
        "  Esc             clear the filter",
        "  space           refresh now",
        "  Up, Down        scroll the job list by a row (also k, j)",
        "  PgUp, PgDn      ... by a page; Home, End: to the first or last page",
        "  h, ?, F1        this help",
        "",
        "Meters: CPU number, the letter (M) of the job on that CPU (+ for several),",
        "  busy share since the last refresh; brackets in bold: held exclusively.",
        "PHASES: each phase's share of the job's time:",
        "  I idle  D data loading  F forward  B backward  O optimizer  C checkpoint",
        "MEM: used (from the job's cgroup) / requested; PRESSURE: the job's memory",
        "  pressure level (normal, moderate, critical; - without a memory watch).",
        "",
        "Any key closes this help.",
    };
    int y = 0;
    for (const char* l : lines) {
      put(y, 0, l, y == 0 ? A_BOLD : A_NORMAL);
      ++y;
    }
  }

  const TopScreenOptions& options_;
  const Palette& palette_;
  int hidden_cpus_ = 0;
};

KeyPress key_of(int ch) {
  switch (ch) {
    case 'q': case 'Q': return {TopKey::kQuit, static_cast<char>(ch)};
    case KEY_F(10): return {TopKey::kQuit, 0};
    case 's': case 'S': case '>': case '.': return {TopKey::kSortNext, static_cast<char>(ch)};
    case KEY_F(6): return {TopKey::kSortNext, 0};
    case '<': case ',': return {TopKey::kSortPrev, static_cast<char>(ch)};
    case '/': return {TopKey::kFilter, '/'};
    case KEY_F(4): return {TopKey::kFilter, 0};
    case 27: return {TopKey::kEscape, 0};
    case 'h': case '?': return {TopKey::kHelp, static_cast<char>(ch)};
    case KEY_F(1): return {TopKey::kHelp, 0};
    case ' ': return {TopKey::kRefresh, ' '};
    case '\n': case '\r': case KEY_ENTER: return {TopKey::kEnter, 0};
    case KEY_BACKSPACE: case 127: case 8: return {TopKey::kBackspace, 0};
    case KEY_RESIZE: return {TopKey::kResize, 0};
    case KEY_UP: return {TopKey::kUp, 0};
    case 'k': return {TopKey::kUp, 'k'};
    case KEY_DOWN: return {TopKey::kDown, 0};
    case 'j': return {TopKey::kDown, 'j'};
    case KEY_PPAGE: return {TopKey::kPageUp, 0};
    case KEY_NPAGE: return {TopKey::kPageDown, 0};
    case KEY_HOME: return {TopKey::kHome, 0};
    case KEY_END: return {TopKey::kEnd, 0};
    default:
      return {TopKey::kOther, ch >= 0x20 && ch < 0x7f ? static_cast<char>(ch) : static_cast<char>(0)};
  }
}

// endwin() on every way out, so the terminal is never left in curses mode.
class Terminal {
 public:
  bool open() {
    setlocale(LC_ALL, "");
    screen_ = newterm(nullptr, stdout, stdin);
    if (screen_ == nullptr) return false;
    set_term(screen_);
    cbreak();  // keys one at a time; Ctrl-C still raises SIGINT
    noecho();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    return true;
  }
  ~Terminal() {
    if (screen_ == nullptr) return;
    endwin();
    delscreen(screen_);
  }

 private:
  SCREEN* screen_ = nullptr;
};

}  // namespace

std::optional<int> run_top_screen(const TopScreenOptions& options, TopModel& model,
                                  const std::function<void(TopModel&)>& fetch, const volatile sig_atomic_t& quit) {
  Terminal terminal;
  if (!terminal.open()) return std::nullopt;
  Palette palette;
  palette.start();
  Screen screen(options, palette);
  TopInput input;
  fetch(model);
  double next = monotonic_seconds() + options.interval;
  screen.draw(model, input);
  while (!quit) {
    const double left = next - monotonic_seconds();
    timeout(left > 0 ? static_cast<int>(left * 1000) + 1 : 0);
    const int ch = getch();
    if (quit) break;
    if (ch == ERR) {
      if (monotonic_seconds() < next) continue;  // interrupted early (a signal)
      fetch(model);
      next = monotonic_seconds() + options.interval;
    } else {
      const TopAction action = input.handle(key_of(ch), model);
      if (action == TopAction::kQuit) break;
      if (action == TopAction::kRefresh) {
        fetch(model);
        next = monotonic_seconds() + options.interval;
      }
    }
    screen.draw(model, input);
  }
  return kExitOk;
}

}  // namespace mlos::cli

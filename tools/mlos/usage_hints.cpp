// SPDX-License-Identifier: Apache-2.0
#include "usage_hints.h"

#include "did_you_mean.h"

namespace mlos::cli {

namespace {

std::vector<const CLI::App*> subcommands_of(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) out.push_back(sub);
  return out;
}

bool has_positionals(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional()) return true;
  }
  return false;
}

// "--name" or "-n" for every option of `app` (positionals have neither).
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

}  // namespace

std::optional<UsageProblem> find_usage_problem(const CLI::App& root, const std::vector<std::string>& args,
                                               const CLI::App* command_app) {
  const CLI::App* app = &root;
  std::string path = root.get_name();
  std::optional<size_t> command_at;  // where CMD starts when given without "--"
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word.size() > 1 && word[0] == '-') {
      const bool is_long = word.rfind("--", 0) == 0;
      const std::string name = is_long ? word.substr(0, word.find('=')) : word.substr(0, 2);
      const CLI::Option* opt = app->get_option_no_throw(name);
      if (opt == nullptr) {
        UsageProblem p{UsageProblem::Kind::kOption, path, ""};
        if (command_at) {
          p.message = path + ": unknown option \"" + name + "\" after CMD \"" + args[*command_at] +
                      "\": options after CMD belong to mlos; put `--` before the command (" + path +
                      " [OPTIONS] -- CMD [ARGS...])";
        } else {
          const std::string hint = did_you_mean(closest_matches(name, option_names(*app)));
          p.message = path + ": unknown option \"" + name + "\"" +
                      (hint.empty() ? " (see " + path + " --help)" : "; " + hint);
        }
        return p;
      }
      // "--opt value" / "-o value": the value is the next word.
      const bool inline_value = is_long ? word.find('=') != std::string::npos : word.size() > 2;
      if (opt->get_type_size() != 0 && !inline_value) ++i;
      continue;
    }
    if (command_at) continue;
    const auto subs = subcommands_of(*app);
    if (!subs.empty()) {
      const CLI::App* found = nullptr;
      for (const CLI::App* sub : subs) {
        if (sub->check_name(word)) found = sub;
      }
      if (found != nullptr) {
        app = found;
        path += " " + found->get_name();
        continue;
      }
      if (!has_positionals(*app)) {
        std::vector<std::string> names;
        for (const CLI::App* sub : subs) names.push_back(sub->get_name());
        const std::string hint = did_you_mean(closest_matches(word, names));
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        return UsageProblem{UsageProblem::Kind::kSubcommand, path,
                            path + ": unknown subcommand \"" + word + "\"" + (hint.empty() ? "" : " (" + hint + ")") +
                                "; the subcommands are " + list + " (see " + path + " --help)"};
      }
    }
    if (app == command_app) command_at = i;
  }
  return std::nullopt;
}

}  // namespace mlos::cli

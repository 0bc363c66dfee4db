#pragma once
// A small command-line parser: --name VALUE, --name=VALUE, boolean --flag, positional arguments.
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace roberta::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Args {
 public:
  // value_options take a value; flags do not. Anything else starting with "--" is an error.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& value_options,
       const std::set<std::string>& flags) {
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a == "--") {
        positional_.insert(positional_.end(), argv.begin() + static_cast<ptrdiff_t>(i) + 1, argv.end());
        break;
      }
      if (a.size() > 2 && a.starts_with("--")) {
        std::string name = a.substr(2), value;
        const size_t eq = name.find('=');
        const bool inline_value = eq != std::string::npos;
        if (inline_value) value = name.substr(eq + 1), name = name.substr(0, eq);
        if (flags.count(name)) {
          if (inline_value) throw UsageError("option --" + name + " takes no value");
          flags_.insert(name);
        } else if (value_options.count(name)) {
          if (!inline_value) {
            if (i + 1 >= argv.size()) throw UsageError("option --" + name + " needs a value");
            value = argv[++i];
          }
          values_[name] = value;
        } else {
          throw UsageError("unknown option --" + name);
        }
      } else {
        positional_.push_back(a);
      }
    }
  }

  bool flag(const std::string& name) const { return flags_.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  std::string require(const std::string& name) const {
    if (auto v = get(name)) return *v;
    throw UsageError("missing required option --" + name);
  }
  // A non-negative integer option in [lo, hi].
  std::optional<long long> integer(const std::string& name, long long lo, long long hi) const {
    const auto v = get(name);
    if (!v) return std::nullopt;
    size_t used = 0;
    long long n = 0;
    try {
      n = std::stoll(*v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v->size() || v->empty() || n < lo || n > hi)
      throw UsageError("--" + name + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "], got \"" + *v + "\"");
    return n;
  }
  std::optional<double> number(const std::string& name) const {
    const auto v = get(name);
    if (!v) return std::nullopt;
    size_t used = 0;
    double d = 0;
    try {
      d = std::stod(*v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v->size() || v->empty() || !(d >= 0)) throw UsageError("--" + name + " must be a non-negative number");
    return d;
  }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> flags_;
  std::vector<std::string> positional_;
};

}  // namespace roberta::cli

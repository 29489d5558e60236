// A point's plan is the case's base plan with each axis value written at its path, read with
// plan_from_json (so scenario files get the same field checks as plan files), then predicted: on
// the bare roofline ("engine": "none") where the case names no engine, as the sources' worked
// examples are.
#include "planner/plan/scenario.hpp"

#include <cmath>
#include <fmt/format.h>
#include <set>

#include "planner/core/input_error.hpp"
#include "planner/core/limits.hpp"
#include "planner/cost/engine_memory.hpp"
#include "planner/plan/plan.hpp"
#include "planner/plan/predict.hpp"
#include "planner/core/units.hpp"

namespace infer_plan {
namespace {

Json::json_pointer pointer(const std::string& dotted) {
  std::string p;
  size_t start = 0;
  while (start <= dotted.size()) {
    size_t end = dotted.find('.', start);
    if (end == std::string::npos) end = dotted.size();
    p.push_back('/');
    p.append(dotted, start, end - start);
    start = end + 1;
  }
  return Json::json_pointer(p);
}

std::string plain(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

bool matches(const Json& where, const Json& axes) {
  for (const auto& [k, v] : where.items()) {
    auto it = axes.find(k);
    if (it == axes.end() || plain(*it) != plain(v)) return false;
  }
  return true;
}

CheckResult check(const Expectation& e, const Json& figures) {
  CheckResult r{e.path, e.value, nullptr, false, "exact", e.source};
  const Json* got = figure_at(figures, e.path);
  if (!got) return r;
  r.got = *got;
  if (e.value.is_number() && got->is_number()) {
    const double want = e.value.get<double>(), have = got->get<double>();
    const double tol = e.abs_tolerance + e.rel_tolerance * std::fabs(want);
    r.ok = std::fabs(have - want) <= tol;
    if (e.abs_tolerance > 0 || e.rel_tolerance > 0)
      r.tolerance = e.rel_tolerance > 0 ? fmt::format("± {}%", e.rel_tolerance * 100) : fmt::format("± {}", e.abs_tolerance);
  } else {
    r.ok = *got == e.value;
  }
  return r;
}

double factor(const std::string& f, const std::string& where) {
  if (f == "KiB") return static_cast<double>(KiB);
  if (f == "MiB") return static_cast<double>(MiB);
  if (f == "GiB") return static_cast<double>(GiB);
  if (f == "GB") return 1e9;
  try {
    size_t used = 0;
    double v = std::stod(f, &used);
    if (used == f.size()) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("{}: '{}' is not a number or KiB, MiB, GiB, GB", where, f));
}

bool figure_named(const Json& figures, const std::string& path) {
  try {
    return figures.contains(pointer(path));
  } catch (const Json::exception&) {
    return false;
  }
}

// The figures in the deepest section of `path` that exists, for the message: "fit.fits, fit.margin_bytes, ...".
std::string figure_siblings(const std::vector<const ScenarioPoint*>& points, const std::string& path) {
  const ScenarioPoint* p = nullptr;
  for (const ScenarioPoint* q : points)
    if (q->error.empty()) p = q;
  if (!p) return "none";
  std::string prefix = path;
  const Json* at = &p->figures;
  while (true) {
    const size_t dot = prefix.rfind('.');
    if (dot == std::string::npos) {
      prefix.clear();
      break;
    }
    prefix.resize(dot);
    if (figure_named(p->figures, prefix) && p->figures.at(pointer(prefix)).is_object()) {
      at = &p->figures.at(pointer(prefix));
      break;
    }
  }
  std::string keys;
  for (const auto& item : at->items())
    keys += (keys.empty() ? "" : ", ") + (prefix.empty() ? item.key() : prefix + "." + item.key());
  return keys;
}

}  // namespace

const Json* figure_at(const Json& figures, const std::string& path) {
  try {
    const Json& v = figures.at(pointer(path));
    return v.is_null() ? nullptr : &v;
  } catch (const Json::exception&) {
    return nullptr;
  }
}

size_t ScenarioRun::failures() const {
  size_t n = 0;
  for (const auto& p : points) {
    if (!p.error.empty()) ++n;
    for (const auto& c : p.checks) n += c.ok ? 0 : 1;
  }
  return n;
}

Scenario scenario_from_json(const Json& j, const std::string& where) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected a scenario object", where));
  Scenario s;
  s.source = where;
  s.name = require_string(j, "name", where);
  s.description = optional_string(j, "description", where).value_or("");
  auto it = j.find("cases");
  if (it == j.end() || !it->is_array() || it->empty())
    throw InputError(fmt::format("{}: field 'cases' must be a non-empty array", where));
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& c = (*it)[i];
    const std::string cw = fmt::format("{}: cases[{}]", where, i);
    if (!c.is_object()) throw InputError(fmt::format("{}: expected an object", cw));
    static const std::set<std::string> keys{"name", "plan", "sweep", "expect", "lines", "description"};
    for (const auto& [k, v] : c.items())
      if (!keys.count(k) && !k.starts_with('_'))
        throw InputError(fmt::format("{}: unknown field '{}'; expected one of: {}", cw, k, fmt::join(keys, ", ")));
    ScenarioCase sc;
    sc.name = require_string(c, "name", cw);
    if (c.contains("plan")) sc.plan = require_object(c, "plan", cw);
    if (c.contains("sweep")) {
      for (const auto& [path, values] : require_object(c, "sweep", cw).items()) {
        if (!values.is_array() || values.empty())
          throw InputError(fmt::format("{}: sweep.{} must be a non-empty array of values", cw, path));
        sc.axes.push_back({path, std::vector<Json>(values.begin(), values.end())});
      }
    }
    if (c.contains("expect")) {
      const Json& ex = c.at("expect");
      if (!ex.is_array()) throw InputError(fmt::format("{}: field 'expect' must be an array", cw));
      for (size_t k = 0; k < ex.size(); ++k) {
        const std::string ew = fmt::format("{}: expect[{}]", cw, k);
        const Json& e = ex[k];
        Expectation x;
        x.path = require_string(e, "path", ew);
        if (!e.contains("value")) throw InputError(fmt::format("{}: field 'value' is missing", ew));
        x.value = e.at("value");
        x.abs_tolerance = optional_number(e, "tolerance", ew).value_or(0);
        x.rel_tolerance = optional_number(e, "rel_tolerance", ew).value_or(0);
        if (x.abs_tolerance < 0 || x.rel_tolerance < 0)
          throw InputError(fmt::format("{}: tolerances must be >= 0", ew));
        if (e.contains("where")) x.where = require_object(e, "where", ew);
        x.source = optional_string(e, "source", ew).value_or("");
        sc.expect.push_back(std::move(x));
      }
    }
    if (c.contains("lines")) {
      for (const Json& l : c.at("lines")) {
        if (!l.is_string()) throw InputError(fmt::format("{}: 'lines' must hold strings", cw));
        sc.lines.push_back(l.get<std::string>());
      }
    }
    s.cases.push_back(std::move(sc));
  }
  // Every point is a prediction (0.2 ms for a plain one, a serving simulation far more): a product
  // of axes past the limit would run for minutes without a word. Counted saturating: a product of
  // axes can pass 2^64.
  uint64_t points = 0;
  for (const ScenarioCase& sc : s.cases) {
    uint64_t product = 1;
    for (const SweepAxis& a : sc.axes) product = product > kMaxScenarioPoints ? product : product * a.values.size();
    points += std::min<uint64_t>(product, kMaxScenarioPoints + 1);
    if (points > kMaxScenarioPoints) {
      auto count = [](uint64_t n) {
        return n > kMaxScenarioPoints ? fmt::format("more than {}", kMaxScenarioPoints) : fmt::format("{}", n);
      };
      const bool before = points != std::min<uint64_t>(product, kMaxScenarioPoints + 1);
      throw InputError(fmt::format("{}: case '{}' sweeps {} points{}; at most {} in one scenario (split the axes "
                                   "over files, or sweep fewer values)",
                                   where, sc.name, count(product),
                                   before ? fmt::format(" ({} with the cases before it)", count(points)) : "",
                                   kMaxScenarioPoints));
    }
  }
  return s;
}

Scenario load_scenario(const std::string& path) { return scenario_from_json(read_json_file(path), path); }

ScenarioRun run_scenario(const Scenario& s) {
  ScenarioRun run;
  run.scenario = &s;
  for (const ScenarioCase& c : s.cases) {
    const size_t first = run.points.size();
    std::vector<size_t> index(c.axes.size(), 0);
    while (true) {
      ScenarioPoint p;
      p.case_name = c.name;
      Json plan = c.plan;
      for (size_t a = 0; a < c.axes.size(); ++a) {
        try {
          plan[pointer(c.axes[a].path)] = c.axes[a].values[index[a]];
        } catch (const Json::exception&) {  // the path runs through a string or number
          throw InputError(fmt::format("{}: case '{}': axis '{}' cannot be written into the plan: a "
                                       "section on its path is not an object", s.source, c.name,
                                       c.axes[a].path));
        }
        p.axes[c.axes[a].path] = c.axes[a].values[index[a]];
      }
      try {
        // A source's worked example is the bare roofline unless the case names an engine.
        if (!plan.contains("engine")) plan["engine"] = kNoEngine;
        p.figures = predicted_figures(plan_from_json(plan, fmt::format("{}: case '{}'", s.source, c.name)));
        for (const Expectation& e : c.expect)
          if (matches(e.where, p.axes)) p.checks.push_back(check(e, p.figures));
      } catch (const InputError& e) {
        p.error = e.what();
      }
      run.points.push_back(std::move(p));
      size_t a = 0;  // next point of the cartesian product (last axis fastest)
      for (a = c.axes.size(); a-- > 0;) {
        if (++index[a] < c.axes[a].values.size()) break;
        index[a] = 0;
      }
      if (a == static_cast<size_t>(-1)) break;
    }
    std::vector<const ScenarioPoint*> points;
    for (size_t i = first; i < run.points.size(); ++i) points.push_back(&run.points[i]);
    // A path that names no figure at any point it applies to is a typo, not a failed expectation.
    for (const Expectation& e : c.expect) {
      bool applied = false, named = false;
      for (const ScenarioPoint* p : points)
        if (p->error.empty() && matches(e.where, p->axes)) {
          applied = true;
          named = named || figure_named(p->figures, e.path);
        }
      if (applied && !named)
        throw InputError(fmt::format("{}: case '{}': expectation path '{}' names no figure (beside "
                                     "it: {})", s.source, c.name, e.path, figure_siblings(points, e.path)));
    }
    for (const std::string& line : c.lines)
      run.lines.push_back(render_line(line, points, fmt::format("{}: case '{}'", s.source, c.name)));
  }
  return run;
}

std::string render_line(const std::string& text, const std::vector<const ScenarioPoint*>& points,
                        const std::string& where) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '{') {
      out += text[i++];
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == std::string::npos) throw InputError(fmt::format("{}: unclosed '{{' in line '{}'", where, text));
    std::string body = text.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string spec;
    if (auto colon = body.find(':'); colon != std::string::npos) {
      spec = body.substr(colon + 1);
      body = body.substr(0, colon);
    }
    Json selector = Json::object();
    if (auto at = body.find('@'); at != std::string::npos) {
      std::string sel = body.substr(at + 1);
      body = body.substr(0, at);
      size_t s0 = 0;
      while (s0 < sel.size()) {
        size_t comma = sel.find(',', s0);
        if (comma == std::string::npos) comma = sel.size();
        const std::string pair = sel.substr(s0, comma - s0);
        const size_t eq = pair.find('=');
        if (eq == std::string::npos) throw InputError(fmt::format("{}: selector '{}' is not axis=value", where, pair));
        selector[pair.substr(0, eq)] = pair.substr(eq + 1);
        s0 = comma + 1;
      }
    }
    double scale = 1.0;
    if (auto op = body.find_first_of("/*"); op != std::string::npos) {
      const double f = factor(body.substr(op + 1), where);
      scale = body[op] == '/' ? 1.0 / f : f;
      body = body.substr(0, op);
    }
    const ScenarioPoint* point = nullptr;
    for (const ScenarioPoint* p : points)
      if (matches(selector, p->axes)) {
        point = p;
        break;
      }
    const Json* v = point ? figure_at(point->figures, body) : nullptr;
    if (!v) {
      out += "<" + body + "?>";
      continue;
    }
    if (v->is_boolean() && spec.find('|') != std::string::npos) {
      const size_t bar = spec.find('|');
      out += v->get<bool>() ? spec.substr(0, bar) : spec.substr(bar + 1);
    } else if (v->is_number()) {
      const double x = v->get<double>() * scale;
      try {
        out += spec.empty() ? fmt::format("{}", x) : fmt::format(fmt::runtime("{:" + spec + "}"), x);
      } catch (const fmt::format_error&) {
        throw InputError(fmt::format("{}: '{}' is not a number format (expected e.g. .2f) in line '{}'", where, spec, text));
      }
    } else {
      out += plain(*v);
    }
  }
  return out;
}

}  // namespace infer_plan

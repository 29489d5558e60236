// `infer-plan hw [NAME|PATH]`: hardware profiles and links, with every figure's unit.
#include <algorithm>
#include <fmt/format.h>
#include <memory>

#include "apps/format.hpp"
#include "apps/commands.hpp"
#include "apps/plan_options.hpp"
#include "apps/text_table.hpp"
#include "planner/calibration/calibration.hpp"
#include "planner/calibration/serving_prior.hpp"
#include "planner/cost/engine_capabilities.hpp"
#include "planner/catalog/catalog.hpp"
#include "planner/core/units.hpp"
#include "planner/model/device_arch.hpp"

namespace infer_plan::apps {
namespace {

// A served engine's step model on `p`: calibrated where its fit has the device's runs, transferred
// where not, "-" where the engine does not serve the device's vendor (its capabilities).
std::string served_basis(const HwProfile& p, const std::string& engine, const ServingFit* fit) {
  const DeviceArch* arch = find_device_arch(p.arch);
  const EngineCapabilities* caps = find_engine_capabilities(engine);
  if (!fit || (arch && caps && !caps->vendors.empty() &&
               std::find(caps->vendors.begin(), caps->vendors.end(), arch->vendor) == caps->vendors.end()))
    return "-";
  return std::find(fit->devices.begin(), fit->devices.end(), p.name) != fit->devices.end() ? "calibrated" : "transferred";
}

struct HwArgs {
  std::string name;
  OutputOptions out;
};

Json profile_json(const HwProfile& p) {
  Json links = Json::array();
  for (const auto& l : p.host_links) links.push_back({{"name", l.name}, {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s}});
  Json compute = Json::object();
  for (const auto& [k, v] : p.compute_ops_per_s) compute[k] = v;
  Json reserves = Json::array();
  for (const auto& r : p.reserves) reserves.push_back({{"name", r.name}, {"bytes", r.bytes}});
  Json j{{"name", p.name}, {"description", p.description}, {"source", p.source},
         {"capacity_bytes", p.memory_capacity_bytes}, {"reserved_bytes", p.memory_reserved_bytes},
         {"usable_bytes", p.usable_bytes()}, {"bandwidth_bytes_per_s", p.memory_bandwidth_bytes_per_s},
         {"compute_ops_per_s", compute}, {"host_links", links}, {"reserves", reserves}};
  if (p.device_link)
    j["device_link"] = {{"name", p.device_link->name}, {"bandwidth_bytes_per_s", p.device_link->bandwidth_bytes_per_s}};
  if (!p.arch.empty()) j["arch"] = p.arch;
  if (p.devices_per_node) j["devices_per_node"] = p.devices_per_node;
  if (p.price_per_hour) j["price_per_hour"] = *p.price_per_hour;
  if (p.board_power_w) j["board_power_w"] = *p.board_power_w;
  if (p.node_link)
    j["node_link"] = {{"name", p.node_link->name}, {"bandwidth_bytes_per_s", p.node_link->bandwidth_bytes_per_s}};
  if (p.host)
    j["host"] = {{"description", p.host->description}, {"capacity_bytes", p.host->memory_capacity_bytes},
                 {"reserved_bytes", p.host->memory_reserved_bytes},
                 {"bandwidth_bytes_per_s", p.host->memory_bandwidth_bytes_per_s},
                 {"efficiency", p.host->memory_efficiency}};
  return j;
}

void run(const HwArgs& a) {
  if (a.name.empty()) {
    if (a.out.json()) {
      Json devices = Json::array(), links = Json::array();
      for (const auto& n : builtin_hw_names()) devices.push_back(profile_json(load_hw_profile(n)));
      for (const auto& n : builtin_link_names()) {
        LinkProfile l = load_link(n);
        links.push_back({{"name", l.name},
                         {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s},
                         {"message_latency_us", l.message_latency_s > 0 ? Json(to_ms_exact(l.message_latency_s) * 1e3) : Json(nullptr)}});
      }
      print_json(Json{{"devices", devices}, {"links", links}});
      return;
    }
    TextTable t{{"profile", "arch", "capacity", "usable", "bandwidth", "bf16", "power", "host link", "llama.cpp steps"},
                {false, false, true, true, true, true, true, false, false}, {}};
    const std::vector<std::string> served = served_fit_engines();  // a column each
    for (const std::string& e : served) {
      t.headers.push_back(e + " steps");
      t.right_aligned.push_back(false);
    }
    const std::vector<std::string> measured = builtin_calibration_names();
    for (const auto& n : builtin_hw_names()) {
      const HwProfile p = load_hw_profile(n);
      auto bf16 = p.compute_ops_per_s.find("bf16");
      const bool own = std::find(measured.begin(), measured.end(), p.name) != measured.end();
      std::vector<std::string> row{p.name, p.arch.empty() ? "-" : p.arch, format_gib(static_cast<double>(p.memory_capacity_bytes)),
                                   format_gib(static_cast<double>(p.usable_bytes())), format_rate(p.memory_bandwidth_bytes_per_s),
                                   bf16 == p.compute_ops_per_s.end() ? "-" : format_flops(bf16->second),
                                   p.board_power_w ? fmt::format("{:g} W", *p.board_power_w) : "-",
                                   p.host_links.empty() ? "-" : p.host_links.front().name,
                                   own ? "calibrated" : "transferred"};
      for (const std::string& e : served) row.push_back(served_basis(p, e, stored_serving_fit(e)));
      t.rows.push_back(std::move(row));
    }
    fmt::print("{}", t.render());
    fmt::print("  (llama.cpp steps: fitted to published runs of the device, or transferred from the devices of its arch;\n"
               "   {} steps: the engine's published serving runs pooled, the device's among them or not; - where the\n"
               "   engine does not serve the device; `calibrate --loo device [--engine E]` says how close each is;\n"
               "   power: the board's, where the datasheet states it)\n\nlinks (per direction; latency: one small transfer's, "
               "which each KV transfer pays beside its bytes):\n",
               fmt::join(served, ", "));
    TextTable lt{{"link", "bandwidth", "latency", "description"}, {false, true, true, false}, {}};
    for (const auto& n : builtin_link_names()) {
      LinkProfile l = load_link(n);
      lt.rows.push_back({l.name, format_rate(l.bandwidth_bytes_per_s),
                         l.message_latency_s > 0 ? fmt::format("{:g} us", l.message_latency_s * 1e6) : "-", l.description});
    }
    fmt::print("{}", lt.render("  "));
    return;
  }
  const HwProfile p = load_hw_profile(a.name);
  if (a.out.json()) {
    print_json(profile_json(p));
    return;
  }
  fmt::print("{}: {}\n  from {}\n", p.name, p.description, p.source);
  if (const DeviceArch* arch = find_device_arch(p.arch))
    fmt::print("  arch       {} ({}): the step model transfers from the devices of it\n", arch->name, arch->vendor);
  else
    fmt::print("  arch       not stated (field \"arch\": one of {}): the step model transfers from every device\n",
               device_arch_names());
  fmt::print("  memory     {} ({} B), reserved {}, usable {}\n", format_gib(static_cast<double>(p.memory_capacity_bytes)),
             p.memory_capacity_bytes, format_gib(static_cast<double>(p.memory_reserved_bytes)),
             format_gib(static_cast<double>(p.usable_bytes())));
  fmt::print("  bandwidth  {}\n", format_rate(p.memory_bandwidth_bytes_per_s));
  for (const auto& [k, v] : p.compute_ops_per_s)
    fmt::print("  {:<10} {}\n", k, k.starts_with("int") ? format_int_ops(v) : format_flops(v));
  for (const auto& l : p.host_links) fmt::print("  host link  {} ({} per direction)\n", l.name, format_rate(l.bandwidth_bytes_per_s));
  if (p.device_link)
    fmt::print("  device link {} ({} per direction)\n", p.device_link->name, format_rate(p.device_link->bandwidth_bytes_per_s));
  if (p.price_per_hour) fmt::print("  price      ${:.2f} per device-hour (advise's costs)\n", *p.price_per_hour);
  if (p.board_power_w) fmt::print("  power      {:g} W board power (a transferred prefill scales with it)\n", *p.board_power_w);
  if (p.devices_per_node)
    fmt::print("  node       {} devices{}\n", p.devices_per_node,
               p.node_link ? fmt::format(", then {} ({} per direction) between nodes", p.node_link->name,
                                         format_rate(p.node_link->bandwidth_bytes_per_s))
                           : "");
  if (p.host)
    fmt::print("  host       {} ({}), {} x {} read by the CPU (a layer split's host layers)\n",
               format_gib(static_cast<double>(p.host->memory_capacity_bytes)), p.host->description,
               format_rate(p.host->memory_bandwidth_bytes_per_s), p.host->memory_efficiency);
  for (const auto& r : p.reserves) fmt::print("  reserve    {} {}\n", r.name, format_bytes(r.bytes));
  for (const auto& s : p.sources) fmt::print("  source     {}\n", s);
}

}  // namespace

void add_hw_command(CLI::App& app) {
  auto args = std::make_shared<HwArgs>();
  CLI::App* cmd = app.add_subcommand("hw", "Hardware profiles and links; lists the built-ins when no name is given");
  cmd->add_option("PROFILE", args->name, "Built-in profile name or profile JSON path");
  args->out.add_to(*cmd);
  cmd->footer("A profile is a JSON file (see hwprofiles/h200.json): memory capacity, reserved and bandwidth, compute\n"
              "per precision, links; sizes and rates with units (\"141 GB\", \"4.8 TB/s\"); \"arch\" its architecture,\n"
              "the level the engines' step models transfer at (" + device_arch_names() + ").\nExamples:\n"
              "  infer-plan hw                # the built-in profiles and links\n"
              "  infer-plan hw h200 --json    # one profile as the planner reads it");
  cmd->callback([args] { run(*args); });
}

}  // namespace infer_plan::apps

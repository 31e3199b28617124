#include "core/bind.hpp"
#include "rig/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "core/files.hpp"
#include "core/host.hpp"
#include "core/units.hpp"
#include "injectors/injector.hpp"
#include "targets/target.hpp"
#include "workloads/workload.hpp"

namespace rig {

const kind_decl* scenario::injector(const std::string& name) const {
  for (const auto& i : injectors)
    if (i.name == name) return &i;
  return nullptr;
}

const option_table& top_options() {
  static const option_table t = {
      {.name = "name", .type = opt_type::string, .default_text = "",
       .help = "scenario name; names the run directory", .required = true},
      {.name = "description", .type = opt_type::string, .default_text = "\"\"",
       .help = "what this scenario magnifies, in one line"},
      {.name = "seed", .type = opt_type::integer, .default_text = "0",
       .help = "seed for every random choice in the run, 0 to 9223372036854775807 (report.json scenario.seed)", .min = 0},
      {.name = "tags", .type = opt_type::strings, .default_text = "[]",
       .help = "labels for `rig suite --filter TAG` (e.g. \"net\", \"release\")"},
      {.name = "require_all", .type = opt_type::boolean, .default_text = "true",
       .help = "true: an injector that cannot work on this host (no root, no netem, ...) stops the run before it "
               "starts (exit 3); false: the run goes on without it, and the report lists it as skipped, with why"},
  };
  return t;
}

const option_table& phase_options() {
  static const option_table t = {
      {.name = "name", .type = opt_type::string, .default_text = "", .help = "phase name", .required = true},
      {.name = "duration", .type = opt_type::duration, .default_text = "",
       .help = "how long the workloads run in this phase", .min = 100e6, .max = 7 * 24 * 3600e9, .required = true},
      {.name = "inject", .type = opt_type::strings, .default_text = "[]",
       .help = "injectors applied for this phase, in order; the others stay reverted"},
  };
  return t;
}

const option_table& expect_options() {
  static const option_table t = {
      {.name = "checks", .type = opt_type::strings, .default_text = "[]",
       .help = "expressions over the report, e.g. \"nagle.rr.latency.p50 > 10ms\"; any failing one exits 1"},
  };
  return t;
}

const option_table& sweep_options() {
  static const option_table t = {
      {.name = "injector", .type = opt_type::string, .default_text = "",
       .help = "sweep a key of this injector (give injector or workload)"},
      {.name = "workload", .type = opt_type::string, .default_text = "",
       .help = "sweep a key of this workload (rate, connections, payload size, ...)"},
      {.name = "param", .type = opt_type::string, .default_text = "", .help = "the key swept", .required = true},
      {.name = "values", .type = opt_type::strings, .default_text = "",
       .help = "the levels, in order, written as the key takes them (\"5ms\", 4); or from/to/steps"},
      {.name = "from", .type = opt_type::string, .default_text = "", .help = "first level of a linear range (\"500/s\")"},
      {.name = "to", .type = opt_type::string, .default_text = "", .help = "last level of the range, in the same unit"},
      {.name = "steps", .type = opt_type::integer, .default_text = "5", .help = "levels in the range", .min = 2, .max = 100},
      {.name = "repeats", .type = opt_type::integer, .default_text = "1",
       .help = "runs per level; the report gives the median and the spread", .min = 1, .max = 100},
      {.name = "baseline", .type = opt_type::boolean, .default_text = "false",
       .help = "an injector sweep: a first level with the injector not applied"},
      {.name = "knee_factor", .type = opt_type::real, .default_text = "2.0",
       .help = "the knee: the first level where every run's p99 exceeds this times the first level's median", .min = 1, .max = 1000},
      {.name = "phase", .type = opt_type::string, .default_text = "",
       .help = "the phase whose figures make the curve (default: the last)"},
      {.name = "phase_duration", .type = opt_type::duration, .default_text = "",
       .help = "every phase of each level's run this long (default: as the phases say)", .min = 100e6,
       .max = 7 * 24 * 3600e9},
      {.name = "expect", .type = opt_type::strings, .default_text = "[]",
       .help = "checks on the curve, on each level's median: \"knee.rr.level >= 3000/s\", "
               "\"level[2000/s].rr.p99 < 5ms\", \"all.rr.errors == 0\", \"max.rr.throughput >= 1700/s\"; "
               "a failing one exits 1"},
      {.name = "levels_may_fail", .type = opt_type::boolean, .default_text = "false",
       .help = "true: a level's run whose own [expect] checks fail does not fail the sweep (by default it does)"},
  };
  return t;
}

std::vector<std::string> every_phase_lasts(const std::vector<phase_decl>& phases, const std::string& duration) {
  std::vector<std::string> o;
  for (const auto& p : phases) o.push_back(fmt::format("phases.{}.duration=\"{}\"", p.name, duration));
  return o;
}

std::vector<std::string> sweep_decl::overrides_for(int level, const std::vector<phase_decl>& phases) const {
  std::vector<std::string> o;
  if (phase_duration_ns > 0) o = every_phase_lasts(phases, fmt::format("{}ns", phase_duration_ns));
  if (level >= 0) {
    o.push_back(fmt::format("{}.{}.{}={}", section, name, param, literals[size_t(level)]));
  } else {  // the baseline: the swept injector left out of every phase
    for (const auto& p : phases) {
      if (std::find(p.inject.begin(), p.inject.end(), name) == p.inject.end()) continue;
      std::string list;
      for (const auto& i : p.inject)
        if (i != name) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", i);
      o.push_back(fmt::format("phases.{}.inject=[{}]", p.name, list));
    }
  }
  return o;
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > max_name_length) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::string name_rule() { return fmt::format("1 to {} letters, digits, '_' or '-'", max_name_length); }

void check_tags(const std::vector<std::string>& tags, const source_pos& where, diagnostics& diags) {
  for (const auto& t : tags)
    if (!valid_name(t)) diags.add(where, fmt::format("tag '{}' must be {}", t, name_rule()));
}

namespace {

// What an injector of the scenario takes over while its phase runs (its kind says).
std::vector<std::string> holds(const kind_decl& d) {
  const injector_kind* k = find_injector_kind(d.kind);
  return k && k->holds ? k->holds(d.opts) : std::vector<std::string>{};
}

const std::vector<std::string> top_level_sections = {"target", "workloads", "injectors", "phases", "expect", "sweep"};

template <typename Kind>
std::vector<std::string> kind_names(const std::vector<Kind>& kinds) {
  std::vector<std::string> out;
  for (const auto& k : kinds) out.emplace_back(k.name);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

struct loader {
  std::string file;
  std::map<std::string, std::string> origins;  // dotted key path -> "--set ..."
  diagnostics diags;

  source_pos where_table(const std::string& path, const toml::node& n) {
    if (auto it = origins.find(path); it != origins.end()) return {file, 0, 0, it->second};
    return pos_of(file, n.source());
  }

  // Two-pass decode of one kind table: the envelope ("kind"), then the kind's options.
  template <typename Kind>
  std::optional<kind_decl> decode_kind(const toml::node& node, const std::string& name, const std::string& section,
                                       const std::string& path, const std::vector<Kind>& kinds,
                                       const std::string& what) {
    const source_pos tpos = where_table(path, node);
    const toml::table* tbl = node.as_table();
    if (!tbl) {
      diags.add(tpos, fmt::format("{} must be a table", section));
      return std::nullopt;
    }
    const toml::node* kind_node = tbl->get("kind");
    if (!kind_node) {
      diags.add(tpos, fmt::format("missing key 'kind' in {} (one of: {})", section, join(kind_names(kinds))));
      return std::nullopt;
    }
    const source_pos kpos = where_table(path + ".kind", *kind_node);
    if (!kind_node->is_string()) {
      diags.add(kpos, fmt::format("'kind' in {} must be a string", section));
      return std::nullopt;
    }
    const std::string kind = *kind_node->value<std::string>();
    const Kind* k = find_kind(kinds, kind);
    if (!k) {
      diags.add(kpos, fmt::format("unknown {} kind '{}' in {}{} (known: {})", what, kind, section,
                                  did_you_mean(kind, kind_names(kinds)), join(kind_names(kinds))));
      return std::nullopt;
    }
    bind_context ctx{file, section, path, &origins, tpos, allow_remote};
    const size_t before = diags.size();
    // Injectors take one key beside their kind's own: may_be_unverified.
    const bool injector = what == "injector";
    kind_decl d{name, kind,
                bind_options(k->options(), *tbl, ctx, diags,
                             injector ? std::vector<std::string_view>{"kind", "may_be_unverified"}
                                      : std::vector<std::string_view>{"kind"}),
                tpos};
    if (const toml::node* mu = injector ? tbl->get("may_be_unverified") : nullptr) {
      if (const auto b = mu->value<bool>(); b && mu->is_boolean())
        d.may_be_unverified = *b;
      else
        diags.add(where_table(path + ".may_be_unverified", *mu),
                  fmt::format("'may_be_unverified' in {} must be true or false", section));
    }
    if (k->check && diags.size() == before) k->check(d.opts, ctx, diags);
    return d;
  }

  // --set a.b.c=value: phases are addressed by name (phases.nagle.duration=2s).
  void apply_overrides(toml::table& doc, const std::vector<std::string>& overrides) {
    for (const auto& a : overrides) {
      const auto eq = a.find('=');
      const std::string origin = "--set " + a;
      if (eq == std::string::npos || eq == 0) {
        diags.add({file, 0, 0, origin}, "expected key=value, e.g. --set workloads.rr.connections=8");
        continue;
      }
      const std::string key = a.substr(0, eq);
      std::vector<std::string> parts;
      std::istringstream in(key);
      for (std::string p; std::getline(in, p, '.');) parts.push_back(p);
      toml::table* t = &doc;
      std::string path;
      bool ok = true;
      for (size_t i = 0; i + 1 < parts.size() && ok; ++i) {
        const std::string& p = parts[i];
        if (i == 0 && p == "phases") {
          if (parts.size() != 3) {
            diags.add({file, 0, 0, origin}, "expected phases.<name>.<key>=value");
            ok = false;
            break;
          }
          toml::array* arr = doc["phases"].as_array();
          toml::table* found = nullptr;
          std::vector<std::string> names;
          if (arr)
            for (auto& el : *arr)
              if (auto* pt = el.as_table())
                if (auto n = (*pt)["name"].value<std::string>()) {
                  names.push_back(*n);
                  if (*n == parts[1]) found = pt;
                }
          if (!found) {
            diags.add({file, 0, 0, origin}, "no phase '" + parts[1] + "'" + did_you_mean(parts[1], names));
            ok = false;
            break;
          }
          t = found;
          path = "phases." + parts[1];
          ++i;
          continue;
        }
        path += (path.empty() ? "" : ".") + p;
        toml::node* next = t->get(p);
        if (!next || !next->is_table()) {
          std::vector<std::string> have;
          for (auto&& [k, v] : *t)
            if (v.is_table()) have.emplace_back(k.str());
          if (i == 0) have = top_level_sections;
          diags.add({file, 0, 0, origin}, "no table [" + path + "] in the scenario" + did_you_mean(p, have));
          ok = false;
          break;
        }
        t = next->as_table();
      }
      if (!ok) continue;
      toml::table holder;
      auto value = parse_assigned_value(a.substr(eq + 1), holder);
      value.node()->visit([&](auto& n) { t->insert_or_assign(parts.back(), n); });
      origins[(path.empty() ? "" : path + ".") + parts.back()] = origin;
    }
  }

  scenario load(const std::string& text, const std::vector<std::string>& overrides) {
    scenario sc;
    sc.file = file;
    sc.source_text = text;
    sc.overrides = overrides;
    sc.allow_remote = allow_remote;
    toml::table doc;
    if (const auto deep = toml_too_deep(text)) {
      diags.add({file, deep->first, 0, {}}, fmt::format("a key nested {} levels deep: rig reads keys of at most {} "
                                                        "parts (a.b.c has 3)",
                                                        deep->second + 1, max_toml_dots + 1));
      throw input_error(diags);
    }
    try {
      doc = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
      diags.add(pos_of(file, e.source()), "TOML syntax: " + std::string(e.description()));
      throw input_error(diags);
    }
    apply_overrides(doc, overrides);
    decode_top(doc, sc);
    decode_named(doc, "workloads", workload_kinds(), "workload", sc.workloads);
    decode_named(doc, "injectors", injector_kinds(), "injector", sc.injectors);
    check_descriptors(sc);
    if (!doc.get("workloads"))
      diags.add({file, 1, 1, {}}, "no [workloads.NAME] table: a scenario needs at least one workload");
    decode_phases(doc, sc);
    if (sc.phases.empty() && !doc.get("phases"))
      diags.add({file, 1, 1, {}}, "no [[phases]]: a scenario needs at least one phase (e.g. a baseline)");
    decode_expect(doc, sc);
    if (const toml::node* n = doc.get("sweep"); n && with_sweep) decode_sweep(*n, sc, text, overrides);
    diags.sort_by_position();
    if (!diags.empty()) throw input_error(diags);
    return sc;
  }

  // The top level: name, description, seed, require_all, and [target].
  void decode_top(const toml::table& doc, scenario& sc) {
    bind_context top{file, "the top level", "", &origins, {file, 1, 1, {}}};
    const option_values tv = bind_options(top_options(), doc, top, diags,
                                          {"target", "workloads", "injectors", "phases", "expect", "sweep"});
    if (tv.has("name")) {
      sc.name = tv.str("name");
      if (!valid_name(sc.name))
        diags.add(tv.where("name"), fmt::format("'name' must be {} (it names the run directory){}",
                                                      name_rule(),
                                                      sc.name.size() > max_name_length
                                                          ? fmt::format("; it has {} characters", sc.name.size())
                                                          : ""));
    }
    if (tv.has("description")) sc.description = printable(tv.str("description"));  // else refused already
    if (tv.has("seed")) sc.seed = tv.integer("seed");
    if (tv.has("tags")) {
      sc.tags = tv.strings("tags");
      check_tags(sc.tags, tv.where("tags"), diags);
    }
    if (tv.has("require_all")) sc.require_all = tv.boolean("require_all");

    if (const toml::node* t = doc.get("target")) {
      if (auto d = decode_kind(*t, "target", "[target]", "target", target_kinds(), "target")) sc.target = *d;
    } else {
      diags.add({file, 1, 1, {}}, "missing [target] (kind = \"builtin\" runs rig's own service)");
    }
  }

  // [workloads.NAME] or [injectors.NAME]: each a kind and its keys.
  template <class Kinds>
  void decode_named(const toml::table& doc, const char* section, const Kinds& kinds, const char* what,
                    std::vector<kind_decl>& out) {
    const toml::node* n = doc.get(section);
    if (!n) return;
    const toml::table* tbl = n->as_table();
    if (!tbl) {
      diags.add(pos_of(file, n->source()), fmt::format("'{}' must hold tables like [{}.NAME]", section, section));
      return;
    }
    for (auto&& [k, v] : *tbl) {
      const std::string name(k.str());
      const std::string path = std::string(section) + "." + name;
      if (!valid_name(name)) {
        diags.add(pos_of(file, k.source()),
                  fmt::format("name '{}' in [{}] must be {}", name, section, name_rule()));
        continue;
      }
      if (auto d = decode_kind(v, name, "[" + path + "]", path, kinds, what)) out.push_back(std::move(*d));
    }
  }

  // Names as declared, even where a table was refused, so one mistake is reported once.
  static std::vector<std::string> declared(const toml::table& doc, const char* section) {
    std::vector<std::string> out;
    if (const toml::table* t = doc[section].as_table())
      for (auto&& [k, v] : *t) out.emplace_back(k.str());
    return out;
  }
  static std::vector<std::string> declared_phases(const toml::table& doc) {
    std::vector<std::string> out;
    if (const toml::array* pa = doc["phases"].as_array())
      for (const auto& el : *pa)
        if (const toml::table* pt = el.as_table())
          if (auto n = (*pt)["name"].value<std::string>()) out.push_back(*n);
    return out;
  }

  // Where the i-th element of an array key is written, else the key itself.
  source_pos element_pos(const toml::node* array_node, size_t i, source_pos otherwise) const {
    if (array_node && array_node->as_array() && i < array_node->as_array()->size())
      return pos_of(file, (*array_node->as_array())[i].source());
    return otherwise;
  }

  void decode_phases(const toml::table& doc, scenario& sc) {
    const toml::node* n = doc.get("phases");
    if (!n) return;
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables()) {
      diags.add(pos_of(file, n->source()), "'phases' must be [[phases]] tables");
      return;
    }
    if (arr->size() > size_t(max_phases)) {
      diags.add(pos_of(file, n->source()),
                fmt::format("{} phases: a scenario has at most {} (the run clock keeps each one's window)",
                            arr->size(), max_phases));
      return;
    }
    const std::vector<std::string> injector_names = declared(doc, "injectors");
    std::set<std::string> seen;
    size_t index = 0;
    for (const auto& el : *arr) {
      ++index;
      const toml::table& pt = *el.as_table();
      const std::string pname = pt["name"].value_or(std::string{});
      const std::string path = "phases." + pname;
      const std::string section =
          pname.empty() ? fmt::format("[[phases]] #{}", index) : fmt::format("[[phases]] '{}'", pname);
      bind_context ctx{file, section, path, &origins, pos_of(file, pt.source())};
      const option_values pv = bind_options(phase_options(), pt, ctx, diags, {});
      if (!pv.has("name") || !pv.has("duration") || !pv.has("inject")) continue;  // each refused already
      phase_decl ph{pv.str("name"), pv.duration_ns("duration"), pv.strings("inject"), pos_of(file, pt.source())};
      if (!valid_name(ph.name))
        diags.add(pv.where("name"), fmt::format("phase name '{}' must be {}", ph.name, name_rule()));
      if (!seen.insert(ph.name).second)
        diags.add(pv.where("name"), "duplicate phase name '" + ph.name + "'");
      check_injects(ph, pv, pt, sc, injector_names);
      sc.phases.push_back(std::move(ph));
    }
  }

  // What a phase injects: declared, each once, and no two that hold the same thing.
  void check_injects(const phase_decl& ph, const option_values& pv, const toml::table& pt, const scenario& sc,
                     const std::vector<std::string>& injector_names) {
    std::set<std::string> injected;
    const auto* inject_node = pt.get("inject");
    for (size_t i = 0; i < ph.inject.size(); ++i) {
      const auto& in = ph.inject[i];
      const source_pos ipos = element_pos(inject_node, i, pv.where("inject"));
      if (std::find(injector_names.begin(), injector_names.end(), in) == injector_names.end())
        diags.add(ipos, fmt::format("phase '{}' injects '{}', which no [injectors.NAME] defines{}", ph.name, in,
                                    did_you_mean(in, injector_names)));
      else if (!injected.insert(in).second)
        diags.add(ipos, fmt::format("phase '{}' injects '{}' twice", ph.name, in));
    }
    for (size_t i = 0; i < ph.inject.size(); ++i)
      for (size_t j = i + 1; j < ph.inject.size(); ++j) {
        const kind_decl* a = sc.injector(ph.inject[i]);
        const kind_decl* b = sc.injector(ph.inject[j]);
        if (!a || !b) continue;
        for (const auto& thing : holds(*a)) {
          const auto hb = holds(*b);
          if (std::find(hb.begin(), hb.end(), thing) == hb.end()) continue;
          diags.add(element_pos(inject_node, j, pv.where("inject")), fmt::format("phase '{}' injects '{}' and '{}', which both set {}: one phase can "
                                      "hold only one of them (put them in phases of their own)",
                                      ph.name, a->name, b->name, thing));
          break;
        }
      }
  }

  void decode_expect(const toml::table& doc, scenario& sc) {
    const toml::node* n = doc.get("expect");
    if (!n) return;
    const toml::table* et = n->as_table();
    if (!et) {
      diags.add(pos_of(file, n->source()), "'expect' must be a table: [expect] checks = [...]");
      return;
    }
    bind_context ctx{file, "[expect]", "expect", &origins, pos_of(file, et->source())};
    const option_values ev = bind_options(expect_options(), *et, ctx, diags, {});
    const std::vector<std::string> phase_names = declared_phases(doc), workload_names = declared(doc, "workloads");
    const auto* checks_node = et->get("checks");
    static const std::vector<std::string> none;
    const auto& checks = ev.has("checks") ? ev.strings("checks") : none;  // a bad type is refused already
    for (size_t i = 0; i < checks.size(); ++i) {
      if (auto c = parse_check(checks[i], element_pos(checks_node, i, ev.where("checks")), phase_names, workload_names,
                               diags))
        sc.checks.push_back(std::move(*c));
    }
  }

  bool with_sweep = true;
  bool allow_remote = false;

  // Every connection is a descriptor of rig's (three through rig's proxy: the workload's end
  // and both of the proxy's), and rig can raise its own limit only to the hard one: more
  // connections than that would fail at connect, phase after phase, so they are refused here.
  void check_descriptors(const scenario& sc) {
    const bool proxy = std::any_of(sc.injectors.begin(), sc.injectors.end(),
                                   [](const kind_decl& k) { return k.kind == "proxy"; });
    const int64_t per = proxy ? 3 : 1, reserve = 256;  // rig's own files, channels and target
    int64_t total = 0;
    const kind_decl* largest = nullptr;
    for (const auto& w : sc.workloads)
      if (w.opts.has("connections")) {
        total += w.opts.integer("connections");
        if (!largest || w.opts.integer("connections") > largest->opts.integer("connections")) largest = &w;
      }
    const int64_t limit = fd_limit_hard();
    if (!largest || total * per + reserve <= limit) return;
    diags.add(largest->opts.where("connections"),
              fmt::format("{} connection{} in all need {} of rig's file descriptors ({} each, and {} for rig "
                          "itself), and this host lets rig have {} (the RLIMIT_NOFILE hard limit): use at most {} "
                          "connections, or raise the hard limit (ulimit -Hn, systemd LimitNOFILE=)",
                          format_count(double(total)), total == 1 ? "" : "s", format_count(double(total * per + reserve)),
                          proxy ? "three through rig's proxy" : "one", reserve, format_count(double(limit)),
                          format_count(double(std::max<int64_t>(0, (limit - reserve) / per)))));
  }

  void decode_sweep(const toml::node& n, scenario& sc, const std::string& text, const std::vector<std::string>& overrides) {
    const toml::table* st = n.as_table();
    if (!st) {
      diags.add(pos_of(file, n.source()), "'sweep' must be a table: [sweep] injector = ..., param = ..., values = [...]");
      return;
    }
    auto& sw = sc.sweep;
    sw.where = where_table("sweep", *st);
    bind_context ctx{file, "[sweep]", "sweep", &origins, sw.where};
    const size_t before = diags.size();
    const option_values v = bind_options(sweep_options(), *st, ctx, diags, {"values"});
    if (diags.size() != before) return;
    sw.present = true;
    // What is swept: exactly one injector or workload, and one of its keys.
    const bool inj = v.has("injector"), wl = v.has("workload");
    if (inj == wl) {
      diags.add(sw.where, "[sweep] needs exactly one of injector = \"NAME\" or workload = \"NAME\"");
      return;
    }
    sw.section = inj ? "injectors" : "workloads";
    sw.name = v.str(inj ? "injector" : "workload");
    const auto& decls = inj ? sc.injectors : sc.workloads;
    const kind_decl* d = nullptr;
    std::vector<std::string> names;
    for (const auto& k : decls) {
      names.push_back(k.name);
      if (k.name == sw.name) d = &k;
    }
    if (!d) {
      diags.add(v.where(inj ? "injector" : "workload"),
                fmt::format("[sweep] {} '{}' is not defined in [{}.NAME]{}", inj ? "injector" : "workload", sw.name,
                            sw.section, did_you_mean(sw.name, names)));
      return;
    }
    const option_table& table = inj ? find_injector_kind(d->kind)->options() : find_workload_kind(d->kind)->options();
    sw.param = v.str("param");
    std::vector<std::string> keys;
    for (const auto& o : table) keys.emplace_back(o.name);
    if (std::find(keys.begin(), keys.end(), sw.param) == keys.end()) {
      diags.add(v.where("param"), fmt::format("[sweep] param '{}' is not a key of {} '{}' ({}){}", sw.param, d->kind,
                                              sw.name, join(keys), did_you_mean(sw.param, keys)));
      return;
    }
    sw.repeats = int(v.integer("repeats"));
    sw.baseline = v.boolean("baseline");
    sw.knee_factor = v.real("knee_factor");
    if (v.has("phase_duration")) sw.phase_duration_ns = v.duration_ns("phase_duration");
    sw.phase = v.has("phase") ? v.str("phase") : (sc.phases.empty() ? "" : sc.phases.back().name);
    const phase_decl* measured = nullptr;
    std::vector<std::string> phase_names;
    for (const auto& p : sc.phases) {
      phase_names.push_back(p.name);
      if (p.name == sw.phase) measured = &p;
    }
    if (!measured) {
      diags.add(v.has("phase") ? v.where("phase") : sw.where,
                fmt::format("[sweep] phase '{}' is not a phase{}", sw.phase, did_you_mean(sw.phase, phase_names)));
      return;
    }
    if (inj && std::find(measured->inject.begin(), measured->inject.end(), sw.name) == measured->inject.end()) {
      diags.add(sw.where, fmt::format("[sweep] phase '{}' does not inject '{}': the levels would change nothing",
                                      sw.phase, sw.name));
      return;
    }
    if (sw.baseline && !inj) diags.add(v.where("baseline"), "[sweep] baseline = true needs an injector sweep");
    for (const auto& o : table)
      if (o.name == sw.param) sw.param_type = o.type;
    sw.levels_may_fail = v.boolean("levels_may_fail");
    std::vector<source_pos> level_pos;
    if (!sweep_levels(*st, v, sw, level_pos)) return;
    check_levels(sc, text, overrides, level_pos);
    std::vector<std::string> labels = sw.labels, workload_names;
    if (sw.baseline) labels.push_back("baseline");
    for (const auto& w : sc.workloads) workload_names.push_back(w.name);
    const auto& checks = v.strings("expect");
    for (size_t i = 0; i < checks.size(); ++i)
      if (auto c = parse_sweep_check(checks[i], element_pos(st->get("expect"), i, v.where("expect")), labels,
                                     workload_names, sw.param_type, diags))
        sw.checks.push_back(std::move(*c));

  }

  // The levels: a list as written, or a linear range; where each is written, for errors.
  bool sweep_levels(const toml::table& st, const option_values& v, sweep_decl& sw, std::vector<source_pos>& level_pos) {
    const toml::node* values = st.get("values");
    if (values && (v.is_set("from") || v.is_set("to"))) {
      diags.add(pos_of(file, values->source()), "[sweep] give values, or from/to/steps, not both");
      return false;
    }
    if (values) {
      const toml::array* arr = values->as_array();
      if (!arr || arr->empty()) {
        diags.add(pos_of(file, values->source()), "[sweep] values must be a non-empty list, e.g. [\"1ms\", \"5ms\"]");
        return false;
      }
      for (const auto& el : *arr) {
        level_pos.push_back(pos_of(file, el.source()));
        if (auto s = el.value<std::string>(); el.is_string()) {
          sw.labels.push_back(*s);
          sw.literals.push_back(toml_literal(opt_type::string, *s));
        } else if (el.is_integer() || el.is_floating_point() || el.is_boolean()) {
          const std::string text = el.is_integer()          ? std::to_string(*el.value<int64_t>())
                                   : el.is_floating_point() ? fmt::format("{}", *el.value<double>())
                                                            : (*el.value<bool>() ? "true" : "false");
          sw.labels.push_back(text);
          sw.literals.push_back(text);
        } else {
          diags.add(level_pos.back(), "[sweep] a level must be a string, a number or a boolean");
          return false;
        }
      }
    } else if (v.is_set("from") && v.is_set("to")) {
      double a = 0, b = 0;
      std::string ua, ub;
      auto split = [](const std::string& t, double& x, std::string& unit) {
        size_t i = 0;
        while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
        if (i == 0) return false;
        x = std::stod(t.substr(0, i));
        unit = t.substr(i);
        return true;
      };
      if (!split(v.str("from"), a, ua) || !split(v.str("to"), b, ub) || ua != ub) {
        diags.add(v.where("from"), "[sweep] from and to must be numbers with the same unit, e.g. from = \"500/s\", to = \"4000/s\"");
        return false;
      }
      const int steps = int(v.integer("steps"));
      for (int i = 0; i < steps; ++i) {
        const double x = a + (b - a) * i / (steps - 1);
        const std::string label = fmt::format("{:g}{}", x, ua);
        sw.labels.push_back(label);
        sw.literals.push_back(ua.empty() ? fmt::format("{:g}", x) : toml_literal(opt_type::string, label));
        level_pos.push_back(v.where("from"));
      }
    } else {
      diags.add(sw.where, "[sweep] needs values = [...], or from, to (and steps)");
      return false;
    }
    return true;
  }

  // Each level must make a valid scenario: checked now, not in the middle of the sweep.
  void check_levels(const scenario& sc, const std::string& text, const std::vector<std::string>& overrides,
                    const std::vector<source_pos>& level_pos) {
    const auto& sw = sc.sweep;
    for (size_t i = 0; i < sw.literals.size(); ++i) {
      auto o = overrides;
      const auto extra = sw.overrides_for(int(i), sc.phases);
      o.insert(o.end(), extra.begin(), extra.end());
      try {
        parse_scenario(text, file, o, false, allow_remote);
      } catch (const input_error& e) {
        // What the level's value did wrong (where: this level, not the --set it became).
        const auto& first = e.diags().items().front();
        diags.add(level_pos[i], fmt::format("[sweep] level {} = {}: {}", sw.param, sw.labels[i], first.message));
      }
    }
  }
};

}  // namespace

scenario parse_scenario(const std::string& text, const std::string& file, const std::vector<std::string>& overrides,
                        bool with_sweep, bool allow_remote) {
  loader l{file, {}, {}};
  l.with_sweep = with_sweep;
  l.allow_remote = allow_remote;
  return l.load(text, overrides);
}

// A scenario is a regular file of at most 1 MiB (the largest in scenarios/ is ~3 KiB): /dev/zero,
// a FIFO or a directory is refused before it is read (core/files.hpp).
scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides, bool allow_remote) {
  return parse_scenario(read_input_file(path, scenario_input), path, overrides, true, allow_remote);
}

}  // namespace rig

#include "harness/profile/trace_file.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace redline::profile {
namespace {

constexpr const char* kHeader = "# redline profile trace 1";

// A name on one line among tab-separated fields.
std::string one_field(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

const char* copy_name(CopyKind k) {
  switch (k) {
    case CopyKind::h2d: return "h2d";
    case CopyKind::d2h: return "d2h";
    case CopyKind::d2d: return "d2d";
    case CopyKind::other: break;
  }
  return "other";
}

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, '\t')) fields.push_back(field);
  if (!line.empty() && line.back() == '\t') fields.emplace_back();
  return fields;
}

std::int64_t integer(const std::string& text, const std::string& where) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw std::runtime_error(where + ": \"" + text + "\" is not an integer");
  return value;
}

CopyKind copy_kind(const std::string& text, const std::string& where) {
  if (text == "h2d") return CopyKind::h2d;
  if (text == "d2h") return CopyKind::d2h;
  if (text == "d2d") return CopyKind::d2d;
  if (text == "other") return CopyKind::other;
  throw std::runtime_error(where + ": copy kind \"" + text + "\" is not h2d, d2h, d2d or other");
}

// A record's fields after its kind; `count` of them (a name may hold none).
void need(const std::vector<std::string>& f, std::size_t count, const std::string& where) {
  if (f.size() != count + 1)
    throw std::runtime_error(where + ": " + f[0] + " has " + std::to_string(f.size() - 1) + " fields, expected " +
                             std::to_string(count));
}

Activity device_record(ActivityKind kind, const std::vector<std::string>& f, const std::string& where) {
  Activity a;
  a.kind = kind;
  a.start_ns = integer(f[1], where);
  a.end_ns = integer(f[2], where);
  a.device = static_cast<int>(integer(f[3], where));
  a.stream = static_cast<std::uint32_t>(integer(f[4], where));
  if (a.end_ns < a.start_ns) throw std::runtime_error(where + ": the record ends before it starts");
  return a;
}

void add_line(Trace& trace, const std::vector<std::string>& f, const std::string& where) {
  const std::string& kind = f[0];
  if (kind == "kernel") {
    need(f, 5, where);
    Activity a = device_record(ActivityKind::kernel, f, where);
    a.name = f[5];
    trace.activities.push_back(std::move(a));
  } else if (kind == "memcpy") {
    need(f, 6, where);
    Activity a = device_record(ActivityKind::memcpy, f, where);
    a.copy = copy_kind(f[5], where);
    a.bytes = integer(f[6], where);
    trace.activities.push_back(std::move(a));
  } else if (kind == "memset") {
    need(f, 5, where);
    Activity a = device_record(ActivityKind::memset, f, where);
    a.bytes = integer(f[5], where);
    trace.activities.push_back(std::move(a));
  } else if (kind == "range") {
    need(f, 3, where);
    Activity a;
    a.kind = ActivityKind::range;
    a.start_ns = integer(f[1], where);
    a.end_ns = integer(f[2], where);
    if (a.end_ns < a.start_ns) throw std::runtime_error(where + ": the range ends before it starts");
    a.name = f[3];
    trace.activities.push_back(std::move(a));
  } else if (kind == "gemm") {
    need(f, 6, where);
    trace.gemms.push_back({integer(f[1], where), integer(f[2], where), integer(f[3], where), integer(f[4], where),
                           integer(f[5], where), f[6]});
  } else if (kind == "gemmcall") {
    need(f, 6, where);
    trace.gemm_calls.push_back({integer(f[1], where), integer(f[2], where), integer(f[3], where),
                                integer(f[4], where), integer(f[5], where), f[6]});
  } else if (kind == "extcorr") {
    need(f, 2, where);
    trace.external_correlations.push_back({integer(f[1], where), integer(f[2], where)});
  } else if (kind == "ncclcall") {
    need(f, 5, where);
    trace.nccl_calls.push_back(
        {integer(f[1], where), f[2], integer(f[3], where), integer(f[4], where), integer(f[5], where)});
  } else if (kind == "kernelcorr") {
    // A trace written before the device was (three fields) is device 0's.
    if (f.size() != 5) need(f, 3, where);
    trace.kernel_correlations.push_back({integer(f[1], where), integer(f[2], where), integer(f[3], where),
                                         f.size() == 5 ? static_cast<int>(integer(f[4], where)) : 0});
  } else if (kind == "clock") {
    need(f, 2, where);
    trace.has_clock = true;
    trace.clock_offset_ns = integer(f[2], where) - integer(f[1], where);
  } else if (kind == "dropped") {
    need(f, 1, where);
    trace.dropped += integer(f[1], where);
  } else if (kind == "problem") {
    trace.problems.push_back(f.size() > 1 ? f[1] : "");
  } else if (kind == "process") {
    need(f, 1, where);
    trace.process_id = integer(f[1], where);
  } else if (kind == "end") {
    need(f, 0, where);
    trace.ended = true;
  } else {
    throw std::runtime_error(where + ": unknown record \"" + kind + "\"");
  }
}

}  // namespace

std::string trace_header() { return std::string(kHeader) + "\n"; }

std::string trace_line(const Activity& a) {
  std::ostringstream out;
  const auto device_part = [&](const char* kind) {
    out << kind << '\t' << a.start_ns << '\t' << a.end_ns << '\t' << a.device << '\t' << a.stream;
  };
  switch (a.kind) {
    case ActivityKind::kernel: device_part("kernel"), out << '\t' << one_field(a.name); break;
    case ActivityKind::memcpy: device_part("memcpy"), out << '\t' << copy_name(a.copy) << '\t' << a.bytes; break;
    case ActivityKind::memset: device_part("memset"), out << '\t' << a.bytes; break;
    case ActivityKind::range: out << "range\t" << a.start_ns << '\t' << a.end_ns << '\t' << one_field(a.name); break;
  }
  out << '\n';
  return out.str();
}

std::string gemm_line(const GemmCall& g) {
  std::ostringstream out;
  out << "gemm\t" << g.time_ns << '\t' << g.m << '\t' << g.n << '\t' << g.k << '\t' << g.batch << '\t'
      << one_field(g.dtype) << '\n';
  return out.str();
}

std::string gemm_call_line(const GemmCallRecord& g) {
  std::ostringstream out;
  out << "gemmcall\t" << g.external_id << '\t' << g.m << '\t' << g.n << '\t' << g.k << '\t' << g.batch << '\t'
      << one_field(g.dtype) << '\n';
  return out.str();
}

std::string external_correlation_line(std::int64_t correlation_id, std::int64_t external_id) {
  return "extcorr\t" + std::to_string(correlation_id) + "\t" + std::to_string(external_id) + "\n";
}

std::string nccl_call_line(const NcclCallRecord& c) {
  std::ostringstream out;
  out << "ncclcall\t" << c.external_id << '\t' << one_field(c.collective) << '\t' << c.count << '\t'
      << c.element_bytes << '\t' << c.ranks << '\n';
  return out.str();
}

std::string kernel_correlation_line(const KernelCorrelation& k) {
  return "kernelcorr\t" + std::to_string(k.correlation_id) + "\t" + std::to_string(k.start_ns) + "\t" +
         std::to_string(k.end_ns) + "\t" + std::to_string(k.device) + "\n";
}

std::string clock_line(std::int64_t activity_ns, std::int64_t monotonic_ns) {
  return "clock\t" + std::to_string(activity_ns) + "\t" + std::to_string(monotonic_ns) + "\n";
}

std::string dropped_line(std::int64_t count) { return "dropped\t" + std::to_string(count) + "\n"; }

std::string problem_line(const std::string& text) { return "problem\t" + one_field(text) + "\n"; }

std::string process_line(std::int64_t pid) { return "process\t" + std::to_string(pid) + "\n"; }

std::string end_line() { return "end\n"; }

Trace parse_trace(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kHeader)
    throw std::runtime_error(source + ":1: not a redline profile trace (its first line is not \"" + kHeader + "\")");
  Trace trace;
  std::size_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (in.eof() && text.back() != '\n') {  // cut short: the program died mid-write
      ++trace.dropped;
      break;
    }
    add_line(trace, fields_of(line), source + ":" + std::to_string(number));
  }
  return trace;
}

Trace read_trace(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(file.string() + ": cannot read the trace");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_trace(text.str(), file.string());
}

}  // namespace redline::profile

// Writes the decode measurements: JSON (bench/results schema), markdown, stdout.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "decode_common.hpp"

namespace decode {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if ((unsigned char)c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// JSON has no NaN: unmeasured quantities are null.
std::string json_number(double x) {
  if (!std::isfinite(x) || x < 0) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

double tokens(const RunRecord& r) { return (double)r.batch * (double)r.steps; }
double tokens_per_s(const RunRecord& r) { return tokens(r) / r.elapsed_s; }
double us_per_step(const RunRecord& r) { return r.elapsed_s * 1e6 / (double)r.steps; }

FILE* open_or_throw(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + path);
  return f;
}

std::string fmt(const char* format, double x) {
  if (!std::isfinite(x) || x < 0) return "–";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

}  // namespace

void write_json(const std::string& path, const ReportHeader& h,
                const std::vector<RunRecord>& records) {
  FILE* f = open_or_throw(path);
  std::fprintf(f, "{\n  \"gpu\": %s,\n  \"commit\": %s,\n  \"command\": %s,\n",
               json_string(h.gpu).c_str(), json_string(h.commit).c_str(),
               json_string(h.command).c_str());
  std::fprintf(f,
               "  \"model\": {\"kind\": %s, \"vocab\": %lld, \"hidden\": %lld, \"ffn\": %lld, "
               "\"layers\": %lld, \"logits_dtype\": %s},\n  \"records\": [\n",
               json_string(h.model).c_str(), (long long)h.vocab, (long long)h.hidden,
               (long long)h.ffn, (long long)h.layers, json_string(h.logits_dtype).c_str());
  for (size_t i = 0; i < records.size(); ++i) {
    const RunRecord& r = records[i];
    const double n = tokens(r);
    std::fprintf(
        f,
        "    {\"mode\": %s, \"sampler\": %s, \"batch\": %lld, \"hidden\": %lld, \"layers\": %lld, "
        "\"steps\": %lld, \"tokens_per_s\": %s, \"us_per_step\": %s, \"sampling_us_per_step\": %s, "
        "\"d2h_bytes_per_token\": %s, \"host_syncs_per_token\": %s, "
        "\"host_syncs_in_loop_per_token\": %s, \"h2d_bytes_per_token\": %s, "
        "\"forward_us_per_step\": %s, \"copy_us_per_step\": %s}%s\n",
        json_string(r.mode).c_str(), json_string(r.sampler).c_str(), (long long)r.batch,
        (long long)h.hidden, (long long)h.layers, (long long)r.steps,
        json_number(tokens_per_s(r)).c_str(), json_number(us_per_step(r)).c_str(),
        json_number(r.sampling_us_per_step).c_str(), json_number((double)r.d2h_bytes / n).c_str(),
        json_number((double)r.host_syncs / n).c_str(),
        json_number((double)r.host_syncs_in_loop / n).c_str(),
        json_number((double)r.h2d_bytes / n).c_str(), json_number(r.forward_us_per_step).c_str(),
        json_number(r.copy_us_per_step).c_str(), i + 1 < records.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) throw std::runtime_error("error writing " + path);
}

void write_markdown(const std::string& path, const ReportHeader& h,
                    const std::vector<RunRecord>& records) {
  FILE* f = open_or_throw(path);
  std::fprintf(f, "Decode loop, %s: %s model, vocab %lld, hidden %lld, ffn %lld, %lld layers, %s logits.\n",
               h.gpu.c_str(), h.model.c_str(), (long long)h.vocab, (long long)h.hidden,
               (long long)h.ffn, (long long)h.layers, h.logits_dtype.c_str());
  std::fprintf(f, "Commit `%s`; command `%s`.\n\n", h.commit.c_str(), h.command.c_str());
  std::fprintf(f,
               "| mode | sampler | B | steps | tokens/s | us/step | forward us/step | loop overhead "
               "us/step | sampling us/step | D2H copy us/step | d2h B/token | host syncs/token (all) "
               "| host syncs/token (in loop) |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const RunRecord& r : records) {
    const double n = tokens(r);
    const double overhead =
        r.forward_us_per_step >= 0 ? us_per_step(r) - r.forward_us_per_step : -1.0;
    std::fprintf(f, "| %s | %s | %lld | %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                 r.mode.c_str(), r.sampler.c_str(), (long long)r.batch, (long long)r.steps,
                 fmt("%.0f", tokens_per_s(r)).c_str(), fmt("%.1f", us_per_step(r)).c_str(),
                 fmt("%.1f", r.forward_us_per_step).c_str(), fmt("%.1f", overhead).c_str(),
                 fmt("%.1f", r.sampling_us_per_step).c_str(),
                 fmt("%.1f", r.copy_us_per_step).c_str(),
                 fmt("%.1f", (double)r.d2h_bytes / n).c_str(),
                 fmt("%.4f", (double)r.host_syncs / n).c_str(),
                 fmt("%.4f", (double)r.host_syncs_in_loop / n).c_str());
  }
  std::fprintf(f, "\n");
  for (const std::string& line : savings_summary(records)) std::fprintf(f, "- %s\n", line.c_str());
  if (std::fclose(f) != 0) throw std::runtime_error("error writing " + path);
}

std::vector<std::string> savings_summary(const std::vector<RunRecord>& records) {
  std::vector<std::string> lines;
  for (const RunRecord& g : records) {
    if (g.mode != "graphed") continue;
    for (const RunRecord& d : records) {
      if (d.batch != g.batch || (d.mode != "ds4" && d.mode != "ds4-naive")) continue;
      const double step_saved = us_per_step(d) - us_per_step(g);
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "B=%lld: graphed vs %s (%s): %.1f us saved per step, %.2f us per token "
                    "(%.2fx tokens/s); d2h %.0f -> %.1f bytes per token; host syncs in the loop "
                    "%.4f -> %.4f per token",
                    (long long)g.batch, d.mode.c_str(), d.sampler.c_str(), step_saved,
                    step_saved / (double)g.batch, tokens_per_s(g) / tokens_per_s(d),
                    (double)d.d2h_bytes / tokens(d), (double)g.d2h_bytes / tokens(g),
                    (double)d.host_syncs_in_loop / tokens(d),
                    (double)g.host_syncs_in_loop / tokens(g));
      lines.push_back(buf);
    }
  }
  return lines;
}

void print_record(const RunRecord& r) {
  const double n = tokens(r);
  std::printf(
      "  %-9s %-15s B=%-4lld %9.0f tok/s %9.1f us/step  fwd %s  sample %s us/step  d2h %.1f B/tok"
      "  syncs/tok %.4f (loop %.4f)  stops eos %lld max %lld\n",
      r.mode.c_str(), r.sampler.c_str(), (long long)r.batch, tokens_per_s(r), us_per_step(r),
      fmt("%.1f", r.forward_us_per_step).c_str(), fmt("%.1f", r.sampling_us_per_step).c_str(),
      (double)r.d2h_bytes / n, (double)r.host_syncs / n, (double)r.host_syncs_in_loop / n,
      (long long)r.rows_finished_eos, (long long)r.rows_finished_max);
  std::fflush(stdout);
}

}  // namespace decode

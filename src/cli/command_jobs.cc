// SPDX-License-Identifier: Apache-2.0
// `synapse jobs submit|list|show|results|cancel`: durable batch jobs, straight on the job
// database (--db: a path or a postgresql:// URL; default $SYNAPSE_JOBS_DB, else
// <state directory>/jobs.db). SQLite's WAL (or PostgreSQL) lets this run beside `synapse serve`,
// whose executor runs the jobs; this command only writes submissions and cancels and reads state
// and results. JSON output is the /v1/jobs shape (jobs/job_json.h).
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <thread>

#include "base/paths.h"
#include "base/progress.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "jobs/job_json.h"
#include "jobs/job_store_open.h"
#include "jobs/submission.h"
#include "request/endpoints.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;
using jobs::JobInfo;
using jobs::JobStore;

// How often `submit --wait` looks at the job: progress moves page by page, so a few looks a
// second are enough and cost the executor nothing (WAL readers do not block it).
constexpr auto kWaitPollInterval = std::chrono::milliseconds(250);

struct Options {
  std::string db;
  bool json = false;
  // submit
  std::string input;
  std::string job_class = "batch";
  std::string idempotency_key;
  bool wait = false;
  // list
  std::string status;
  std::string list_class;  // empty: every class
  int64_t limit = jobs::kDefaultListLimit;
  // show, results, cancel
  std::string id;
  int64_t page = -1;  // results: one page; -1 with --all or by default: every committed page
  bool all = false;
  std::string output;
};

void print_json(const Json& j) { std::printf("%s\n", j.dump(2).c_str()); }

std::string time_text(int64_t ms) {
  const std::time_t t = ms / 1000;
  std::tm local{};
  localtime_r(&t, &local);
  return fmt::format("{:%Y-%m-%d %H:%M:%S}", local);
}

// Opens --db (or $SYNAPSE_JOBS_DB), or the shared database of the state directory (created when
// missing, as `synapse serve` would).
Result<std::unique_ptr<JobStore>> open_store(const Options& o) {
  std::string location = jobs::job_store_location(o.db);
  if (location.empty()) {
    SYN_ASSIGN_OR_RETURN(location, jobs_database_path());
    SYN_RETURN_IF_ERROR(create_directories(std::filesystem::path(location).parent_path().string()));
  }
  SYN_ASSIGN_OR_RETURN(jobs::OpenedJobStore opened, jobs::open_job_store(location));
  return std::move(opened.store);
}

// The submission file, or stdin for "-"; refused past the submission size limit before it is
// all in memory.
Result<std::string> read_input(const std::string& input, int64_t max_bytes) {
  const auto too_large = [&] {
    return Status(ErrorCode::kLimitExceeded,
                  "the submission is larger than " + std::to_string(max_bytes) + " bytes",
                  ErrorWhere{.path = input});
  };
  if (input == "-") {
    std::string text;
    char buffer[1 << 16];
    while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
      text.append(buffer, static_cast<size_t>(std::cin.gcount()));
      if (static_cast<int64_t>(text.size()) > max_bytes) return too_large();
    }
    return text;
  }
  std::error_code error;
  const auto size = std::filesystem::file_size(input, error);
  if (error) {
    return Status(ErrorCode::kIoError, "cannot read: " + error.message(),
                  ErrorWhere{.path = input});
  }
  if (static_cast<int64_t>(size) > max_bytes) return too_large();
  std::ifstream file(input, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return Status(ErrorCode::kIoError, "read failed", ErrorWhere{.path = input});
  return text;
}

void print_line_errors(const JobInfo& job) {
  for (const jobs::LineError& e : job.line_errors) {
    std::fprintf(stderr, "line %lld: %s: %s\n", static_cast<long long>(e.line),
                 std::string(error_code_name(e.code)).c_str(), e.message.c_str());
  }
}

// Polls until the job is terminal, drawing progress on a terminal (silent otherwise).
Result<JobInfo> wait_for(JobStore& store, const JobInfo& submitted) {
  ProgressLine progress(submitted.id, static_cast<uint64_t>(submitted.counts.total));
  JobInfo job = submitted;
  while (!jobs::is_terminal(job.state)) {
    progress.update(static_cast<uint64_t>(job.counts.succeeded + job.counts.failed));
    std::this_thread::sleep_for(kWaitPollInterval);
    SYN_ASSIGN_OR_RETURN(job, store.get_job(submitted.id));
  }
  if (job.state == jobs::JobState::kCompleted) progress.finish();
  return job;
}

std::string done_text(const JobInfo& job) {
  return fmt::format("{}/{}", job.counts.succeeded + job.counts.failed, job.counts.total);
}

int run_submit(JobStore& store, const Options& o) {
  jobs::SubmissionLimits limits;
  limits.item_urls = request::job_item_urls();
  Result<std::string> text = read_input(o.input, limits.max_input_bytes);
  if (!text.ok()) return fail(text.status());
  Result<jobs::JobClass> job_class = jobs::parse_job_class(o.job_class, "--class");
  if (!job_class.ok()) return fail(job_class.status());
  Result<jobs::Submission> submission = jobs::parse_jsonl_submission(*text, *job_class, limits);
  if (!submission.ok()) return fail(submission.status());
  const std::optional<std::string_view> key =
      o.idempotency_key.empty() ? std::nullopt : std::optional<std::string_view>(o.idempotency_key);
  Result<jobs::SubmitResult> submitted = store.submit(*submission, key);
  if (!submitted.ok()) return fail(submitted.status());
  JobInfo job = submitted->job;
  print_line_errors(job);
  if (!submitted->created) {
    std::fprintf(stderr, "an earlier job has the same %s: %s (%s)\n",
                 key ? "idempotency key" : "requests", job.id.c_str(),
                 std::string(jobs::job_state_name(job.state)).c_str());
  }
  if (!o.json) std::printf("%s\n", job.id.c_str());
  std::fflush(stdout);  // the id is useful while --wait still runs
  if (o.wait) {
    Result<JobInfo> finished = wait_for(store, job);
    if (!finished.ok()) return fail(finished.status());
    job = std::move(finished).value();
    if (!o.json) {
      std::fprintf(stderr, "%s %s: %s done, %lld failed\n", job.id.c_str(),
                   std::string(jobs::job_state_name(job.state)).c_str(), done_text(job).c_str(),
                   static_cast<long long>(job.counts.failed));
    }
  }
  if (o.json) print_json(jobs::job_json(job));
  // Waiting for a job that did not complete (failed, cancelled, expired) is a failure.
  return !o.wait || job.state == jobs::JobState::kCompleted ? kExitOk : kExitFailure;
}

int run_list(JobStore& store, const Options& o) {
  const std::string limit_text = std::to_string(o.limit);
  Result<jobs::JobFilter> filter = jobs::parse_job_filter(
      {.status = o.status.empty() ? std::nullopt : std::optional<std::string_view>(o.status),
       .job_class =
           o.list_class.empty() ? std::nullopt : std::optional<std::string_view>(o.list_class),
       .limit = limit_text});
  if (!filter.ok()) return fail(filter.status());
  filter->limit = o.limit + 1;  // one more than asked tells whether more follow
  Result<std::vector<JobInfo>> listed = store.list_jobs(*filter);
  if (!listed.ok()) return fail(listed.status());
  const bool has_more = static_cast<int64_t>(listed->size()) > o.limit;
  if (has_more) listed->resize(static_cast<size_t>(o.limit));
  if (o.json) {
    print_json(jobs::job_list_json(*listed, has_more));
    return kExitOk;
  }
  if (listed->empty()) {
    std::printf("no jobs (synapse jobs submit FILE.jsonl adds one)\n");
    return kExitOk;
  }
  std::printf("%-28s %-10s %-10s %13s  %-19s  %s\n", "ID", "STATUS", "CLASS", "DONE/TOTAL",
              "CREATED", "NODE");
  for (const JobInfo& job : *listed) {
    // NODE: which `synapse serve` ran (or runs) it, from its lease events; queued jobs never
    // leased show "-".
    Result<std::vector<jobs::JobEvent>> events = store.events(job.id);
    const std::string node =
        events.ok() ? jobs::job_node_text(job, *events) : jobs::job_node_text(job, {});
    std::printf("%-28s %-10s %-10s %13s  %-19s  %s\n", job.id.c_str(),
                std::string(jobs::job_state_name(job.state)).c_str(),
                std::string(jobs::job_class_name(job.job_class)).c_str(), done_text(job).c_str(),
                time_text(job.created_ms).c_str(), node.c_str());
  }
  if (has_more) std::printf("(more jobs: --limit N shows up to N)\n");
  return kExitOk;
}

int run_show(JobStore& store, const Options& o) {
  Result<JobInfo> job = store.get_job(o.id);
  if (!job.ok()) return fail(job.status());
  if (o.json) {
    print_json(jobs::job_json(*job));
    return kExitOk;
  }
  std::printf("id          %s\n", job->id.c_str());
  std::printf("status      %s\n", std::string(jobs::job_state_name(job->state)).c_str());
  std::printf("class       %s\n", std::string(jobs::job_class_name(job->job_class)).c_str());
  std::printf(
      "items       %lld total, %lld succeeded, %lld failed, %lld pending\n",
      static_cast<long long>(job->counts.total), static_cast<long long>(job->counts.succeeded),
      static_cast<long long>(job->counts.failed), static_cast<long long>(job->counts.pending()));
  std::printf("pages       %lld\n", static_cast<long long>(job->page_count));
  std::printf("attempts    %lld\n", static_cast<long long>(job->attempts));
  std::printf("created     %s\n", time_text(job->created_ms).c_str());
  if (job->finished_ms) std::printf("finished    %s\n", time_text(*job->finished_ms).c_str());
  std::printf("%s     %s\n", jobs::is_terminal(job->state) ? "deleted" : "expires",
              time_text(jobs::job_expires_at_ms(*job)).c_str());
  if (job->idempotency_key) std::printf("key         %s\n", job->idempotency_key->c_str());
  std::printf("digest      %s\n", job->request_digest.c_str());
  if (job->error_code != ErrorCode::kOk) {
    std::printf("error       %s: %s\n", std::string(error_code_name(job->error_code)).c_str(),
                job->error_message.c_str());
  }
  if (job->counts.invalid_lines > 0) {
    std::printf("invalid     %lld line(s) (below, on stderr)\n",
                static_cast<long long>(job->counts.invalid_lines));
    std::fflush(stdout);
    print_line_errors(*job);
  }
  return kExitOk;
}

// Writes the JSONL of one page or of every committed page, in page order: the lines of OpenAI's
// batch output file.
int run_results(JobStore& store, const Options& o) {
  Result<JobInfo> job = store.get_job(o.id);
  if (!job.ok()) return fail(job.status());
  std::string jsonl;
  if (o.page >= 0) {
    Result<jobs::ResultPage> page = store.result_page(o.id, o.page);
    if (!page.ok()) return fail(page.status());
    jsonl = std::move(page->jsonl);
  } else if (job->page_count > 0) {
    for (std::optional<int64_t> next = 0; next;) {
      Result<jobs::ResultPage> page = store.result_page(o.id, *next);
      if (!page.ok()) return fail(page.status());
      jsonl += page->jsonl;
      next = page->next_page;
    }
  }
  if (!jobs::is_terminal(job->state)) {
    std::fprintf(stderr, "note: job %s is %s; later pages may still come\n", job->id.c_str(),
                 std::string(jobs::job_state_name(job->state)).c_str());
  }
  if (o.output.empty()) {
    // An export piped into a full disk must not look like a success.
    if (std::fwrite(jsonl.data(), 1, jsonl.size(), stdout) != jsonl.size() ||
        std::fflush(stdout) != 0) {
      return fail(Status(ErrorCode::kIoError, "cannot write the results to stdout"));
    }
    return kExitOk;
  }
  std::ofstream file(o.output, std::ios::binary | std::ios::trunc);
  file.write(jsonl.data(), static_cast<std::streamsize>(jsonl.size()));
  file.close();
  if (!file) {
    return fail(
        Status(ErrorCode::kIoError, "cannot write the results", ErrorWhere{.path = o.output}));
  }
  return kExitOk;
}

int run_cancel(JobStore& store, const Options& o) {
  Result<JobInfo> before = store.get_job(o.id);
  if (!before.ok()) return fail(before.status());
  Result<JobInfo> job = store.cancel(o.id);
  if (!job.ok()) return fail(job.status());
  if (o.json) {
    print_json(jobs::job_json(*job));
  } else if (jobs::is_terminal(before->state)) {
    std::printf("%s was already %s\n", job->id.c_str(),
                std::string(jobs::job_state_name(job->state)).c_str());
  } else {
    std::printf("%s cancelled (%s done; committed results stay readable)\n", job->id.c_str(),
                done_text(*job).c_str());
  }
  return kExitOk;
}

}  // namespace

void add_jobs_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* jobs_cmd = app.add_subcommand(
      "jobs", "Durable batch jobs (run by `synapse serve`): submit, list, show, results, cancel");
  jobs_cmd->require_subcommand(1);
  jobs_cmd->fallthrough();  // --db also after the subcommand: `synapse jobs list --db X`
  jobs_cmd->add_option("--db", o->db,
                       "Job database: a path or a postgresql:// URL (default: $SYNAPSE_JOBS_DB, "
                       "else <state directory>/jobs.db, shared with `synapse serve`)");
  const auto with_store = [o, &exit_code](int (*run)(JobStore&, const Options&)) {
    return [o, &exit_code, run] {
      Result<std::unique_ptr<JobStore>> store = open_store(*o);
      exit_code = store.ok() ? run(**store, *o) : fail(store.status());
    };
  };

  CLI::App* submit = jobs_cmd->add_subcommand(
      "submit", "Submit a batch JSONL file (OpenAI's batch input format); prints the job id");
  submit->add_option("file", o->input, "JSONL file, one request per line; - reads stdin")
      ->required();
  submit->add_option("--class", o->job_class, "batch or background")->capture_default_str();
  submit->add_option("--idempotency-key", o->idempotency_key,
                     "Submitting again with this key returns the same job");
  submit->add_flag("--wait", o->wait,
                   "Wait until the job ends (progress on a terminal); exit 1 unless it completed");
  submit->add_flag("--json", o->json, "Print the job as JSON (the /v1/jobs object)");
  submit->callback(with_store(run_submit));

  CLI::App* list = jobs_cmd->add_subcommand("list", "List jobs, newest first");
  list->add_option("--status", o->status,
                   "Only jobs in this state: queued, running, completed, failed, cancelled, "
                   "expired");
  list->add_option("--class", o->list_class, "Only jobs of this class: batch or background");
  list->add_option("--limit", o->limit, "At most this many jobs (1 to 1000)")
      ->capture_default_str();
  list->add_flag("--json", o->json, "Print the list as JSON (the /v1/jobs list object)");
  list->callback(with_store(run_list));

  CLI::App* show = jobs_cmd->add_subcommand("show", "Show one job: status, counts, errors");
  show->add_option("id", o->id, "Job id (job_...)")->required();
  show->add_flag("--json", o->json, "Print the job as JSON (the /v1/jobs object)");
  show->callback(with_store(run_show));

  CLI::App* results = jobs_cmd->add_subcommand(
      "results", "Print a job's committed results as JSONL (readable while it runs)");
  results->add_option("id", o->id, "Job id (job_...)")->required();
  CLI::Option* page = results->add_option("--page", o->page, "Only this result page (0-based)")
                          ->check(CLI::NonNegativeNumber);
  results->add_flag("--all", o->all, "Every committed page, in order (the default)")
      ->excludes(page);
  results->add_option("-o,--output", o->output, "Write to this file instead of stdout");
  results->callback(with_store(run_results));

  CLI::App* cancel = jobs_cmd->add_subcommand(
      "cancel", "Cancel a queued or running job; committed results stay readable");
  cancel->add_option("id", o->id, "Job id (job_...)")->required();
  cancel->add_flag("--json", o->json, "Print the job as JSON (the /v1/jobs object)");
  cancel->callback(with_store(run_cancel));
}

}  // namespace synapse::cli

-- wrk script: each thread POSTs its own share of DIR/tokens.jsonl to /v1/decrypt, one token per
-- request, cycling if the run outlasts them (a cycled token is answered replayedTransaction after
-- full verification and decryption). Counts non-200 answers. Args: TOKENS_FILE THREADS
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  local file, count = args[1], tonumber(args[2])
  tokens = {}
  local n = 0
  for line in io.lines(file) do
    if n % count == id then tokens[#tokens + 1] = line end
    n = n + 1
  end
  i = 0
  ok, other, cycled = 0, 0, 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  i = i + 1
  if i > #tokens then i = 1; cycled = cycled + 1 end
  return wrk.format(nil, "/v1/decrypt", nil, tokens[i])
end

function response(status, headers, body)
  if status == 200 then ok = ok + 1 else other = other + 1 end
end

function done(summary, latency, requests)
  local ok_total, other_total, cycles = 0, 0, 0
  for _, thread in ipairs(threads) do
    ok_total = ok_total + thread:get("ok")
    other_total = other_total + thread:get("other")
    cycles = math.max(cycles, thread:get("cycled"))
  end
  io.write(string.format("RESULT requests=%d ok=%d non200=%d cycles=%d seconds=%.2f rps=%.0f p50_ms=%.3f p99_ms=%.3f\n",
    summary.requests, ok_total, other_total, cycles, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end

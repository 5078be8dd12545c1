-- Run by editors/neovim/check.sh inside `nvim --headless`: load nki_assist.lua with the server command
-- from $NKI_ASSIST_LSP_CMD and settings that ignore NKI202, open $NKI_ASSIST_CHECK_FILE and wait for its
-- diagnostics. Prints one line per diagnostic; exits 0 when the expected rule ($NKI_ASSIST_CHECK_RULE) is
-- among them and NKI202 is not (the settings reached the server), 1 otherwise.
local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local cmd = vim.split(os.getenv("NKI_ASSIST_LSP_CMD"), " ", { trimempty = true })
dofile(here .. "/nki_assist.lua").setup({ cmd = cmd, settings = { ["nki-assist"] = { ignore = { "NKI202" } } } })
local want = os.getenv("NKI_ASSIST_CHECK_RULE")
vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("NKI_ASSIST_CHECK_FILE")))
local found = false
local ok = vim.wait(60000, function()
  for _, d in ipairs(vim.diagnostic.get(0)) do
    if tostring(d.code) == want or (d.message or ""):find(want, 1, true) then
      found = true
    end
  end
  return found
end, 200)
local v = vim.version()
print(string.format("neovim %d.%d.%d: %d diagnostic(s)", v.major, v.minor, v.patch, #vim.diagnostic.get(0)))
for _, d in ipairs(vim.diagnostic.get(0)) do
  print(string.format("  line %d: %s %s", d.lnum + 1, tostring(d.code), (d.message or ""):sub(1, 100)))
end
local ignored = true
for _, d in ipairs(vim.diagnostic.get(0)) do
  if tostring(d.code) == "NKI202" then
    ignored = false
  end
end
if not (ok and found) then
  print("FAIL: no " .. want .. " diagnostic within 60 s")
elseif not ignored then
  print("FAIL: NKI202 reported although the settings ignore it")
else
  print("OK: " .. want .. " reported, NKI202 ignored as the settings say")
end
vim.cmd(ok and found and ignored and "qa!" or "cq!")

-- nki-assist language server for Neovim 0.7 and later (docs: editors/neovim/README.md).
--
--   dofile("/path/to/nki-assist/editors/neovim/nki_assist.lua").setup({
--     cmd = { "nki-assist", "lsp" },            -- or { "/path/to/venv/bin/python", "-m", "nki_assist", "lsp" }
--     settings = { ["nki-assist"] = { target = "trn2" } },
--   })
--
-- 0.11+: registered with vim.lsp.config / vim.lsp.enable. 0.7-0.10 (no vim.lsp.config; 0.7 has no
-- vim.lsp.start either): a FileType autocommand starts one client per project root with
-- vim.lsp.start_client and attaches every matching buffer to it.
local M = {}

local defaults = {
  cmd = { "nki-assist", "lsp" },
  filetypes = { "python", "cuda" },
  root_markers = { "pyproject.toml", "port.toml", ".git" },
  settings = { ["nki-assist"] = vim.empty_dict() }, -- an empty JSON object, not []
}

-- The nearest directory above `path` holding one of `markers`, else the file's own directory.
local function find_root(path, markers)
  local dir = vim.fn.fnamemodify(path, ":p:h")
  local start = dir
  while true do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(dir .. "/" .. marker) then
        return dir
      end
    end
    local parent = vim.fn.fnamemodify(dir, ":h")
    if parent == dir then
      return start
    end
    dir = parent
  end
end

function M.setup(opts)
  local cfg = vim.tbl_deep_extend("force", defaults, opts or {})
  if vim.lsp.config ~= nil and vim.lsp.enable ~= nil then -- Neovim 0.11+
    vim.lsp.config("nki_assist", {
      cmd = cfg.cmd,
      filetypes = cfg.filetypes,
      root_markers = cfg.root_markers,
      settings = cfg.settings,
    })
    vim.lsp.enable("nki_assist")
    return
  end
  local clients = {} -- root directory -> client id
  vim.api.nvim_create_autocmd("FileType", {
    group = vim.api.nvim_create_augroup("nki_assist_lsp", { clear = true }),
    pattern = cfg.filetypes,
    callback = function(args)
      local name = vim.api.nvim_buf_get_name(args.buf)
      if name == "" or vim.bo[args.buf].buftype ~= "" then
        return
      end
      local root = find_root(name, cfg.root_markers)
      local id = clients[root]
      local client = id and vim.lsp.get_client_by_id(id)
      if not client or client.is_stopped() then
        id = vim.lsp.start_client({
          name = "nki_assist",
          cmd = cfg.cmd,
          root_dir = root,
          workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
          settings = cfg.settings,
          init_options = { settings = cfg.settings["nki-assist"] }, -- the section itself (docs/lsp.md)
        })
        if not id then
          vim.notify("nki-assist: could not start " .. table.concat(cfg.cmd, " "), vim.log.levels.ERROR)
          return
        end
        clients[root] = id
      end
      vim.lsp.buf_attach_client(args.buf, id)
    end,
  })
end

return M

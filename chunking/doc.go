// Package chunking cuts a repository's files into deterministic, citable
// chunks for Trellis's code memory, and decides which files must never be
// read.
//
// # Chunks
//
// [ChunkFile] is pure: given a repository-relative path and the file's
// bytes it returns the chunks, or a [Skip] saying why there are none.
//
//   - Code (Python, Go, JavaScript, TypeScript, TSX, Rust, Java; see
//     [Language]) is parsed with tree-sitter. Each function, method, class,
//     struct, interface, enum, trait, impl block and type alias is a chunk,
//     together with the comments directly above it (no blank line between),
//     its decorators, annotations or attributes, and its docstring. Methods
//     are chunks of their own named by their qualified name:
//     "TextWrapper.wrap" (Python), "Reader.Read" (Go, qualified by the
//     receiver type), "Foo.fmt" (a Rust impl of Foo), "Outer.Inner.m"
//     (nested classes). A class chunk keeps the class header, docstring and
//     fields and shows each method as a one-line stub (its signature and
//     " ..."), so methods are not stored twice. The code between
//     definitions (package clauses, imports, constants, top-level
//     statements) forms "module" chunks. Functions nested inside functions
//     stay in their parent.
//   - Markdown is one "section" chunk per ATX header ("# Title"), named by
//     the header text; headers inside fenced code blocks do not count. Text
//     before the first header, or a file without headers, is a section
//     named after the file.
//   - Any other text file is one "file" chunk named after the file.
//   - Binary files (known binary extensions, a NUL byte, invalid UTF-8) and
//     empty files are skipped with a reason.
//
// Size limits ([MaxChunkLines], [MaxChunkBytes]): an oversized definition
// is split at statement boundaries (between its top-level statements, and
// within a statement too large on its own between its children), each part
// keeping the definition's name and the tag "partial"; oversized module
// code likewise; oversized sections and text files are split into line
// windows, ending at a blank line where one is near. Consecutive sibling
// definitions of the same kind, each shorter than [MinChunkLines] and on
// adjacent lines (no blank line between them: a block of one-line methods
// or type aliases), are merged (tag "merged", names joined by ", ").
// Definitions set apart by blank lines always keep chunks of their own. Code larger than [MaxParseBytes], or that tree-sitter cannot
// parse at all, falls back to line windows (chunk type "file", tag
// "fallback"); code with syntax errors is chunked from tree-sitter's
// error-recovered tree (tag "parse_error"), definitions found inside error
// nodes included, and everything else kept as module chunks.
//
// Chunk ids are "chunk_" + 16 hex digits of SHA-256 over the path, the
// qualified name and the content ([ChunkID]); they do not depend on line
// numbers, so an unchanged function keeps its id when lines are added
// elsewhere in the file. Content is the chunk's lines joined by "\n" (CRLF
// normalised, no trailing newline). Two chunks of one file with the same
// name and content are told apart by hashing the second as "name#2".
//
// # Exclusion rules
//
// [Rules] (defaults from [DefaultRules]) decide what is never read.
// [Rules.Excluded] judges a path before the file is opened;
// [Rules.SensitiveContent] judges its content before it is chunked;
// [Rules.Walk] applies both to a whole repository, loading .gitignore files
// as it goes. By default these are excluded:
//
//   - secrets and version control: .git/, .hg/, .svn/, .ssh/, .gnupg/,
//     .aws/, .azure/, .kube/, .password-store/, .secrets/;
//     .env, .env.*, *.env, .envrc; key material *.pem, *.key, id_rsa*,
//     id_dsa*, id_ecdsa*, id_ed25519*, *.p12, *.pfx, *.keystore, *.jks,
//     *.p8, *.ppk, *.asc, *.gpg, *.kdbx, *.ovpn; credential stores .netrc,
//     .npmrc and .yarnrc (which commonly hold registry tokens, so they are
//     excluded without being read), .pypirc, .git-credentials,
//     .gitcookies, .htpasswd, .pgpass, .my.cnf, .boto, .s3cfg, credentials,
//     credentials.json/.yml/.yaml, client_secret*.json,
//     service-account*.json, secrets.json/.yml/.yaml/.toml, Terraform
//     state and *.tfvars; and at any depth .aws/credentials,
//     .docker/config.json, .kube/config, .config/gh/hosts.yml,
//     .config/gcloud/, .m2/settings.xml, .gradle/gradle.properties,
//     .cargo/credentials;
//   - agent instructions: the folders .claude/, .cursor/, .codex/, .aider*,
//     .windsurf/, .continue/, .roo/, .cline/, .gemini/, .amazonq/, .kiro/,
//     .junie/, .openhands/, .goose/, .github/agents/, .github/instructions/,
//     .github/prompts/, and the files .aider*, .cursorrules,
//     .windsurfrules, .clinerules, .roorules,
//     .github/copilot-instructions.md (plain documentation such as
//     AGENTS.md or CLAUDE.md is read);
//   - caches and build output: node_modules/, bower_components/,
//     __pycache__/, .venv/, venv/, .virtualenv/, .tox/, .nox/,
//     .pytest_cache/, .mypy_cache/, .ruff_cache/, .hypothesis/,
//     .ipynb_checkpoints/, *.egg-info/, .eggs/, dist/, build/, .cache/,
//     target/, .gradle/, .next/, .nuxt/, .svelte-kit/, .parcel-cache/,
//     .turbo/, .terraform/, .serverless/, coverage/, htmlcov/, .idea/,
//     .vs/; and vendor/ and third_party/ while SkipVendor is set (the
//     default);
//   - configuration and data files named after a secret: a file whose
//     extension is one of DataExtensions (.json, .yaml, .yml, .toml, .ini,
//     .env, .txt, .cfg, .conf, .config, .properties, .xml, .plist, .csv,
//     none, ...) and whose name contains password, passwd, secret,
//     credential, apikey, api_key, private_key or access_key, or has the
//     word token or key (split at punctuation and camelCase, singular or
//     plural: api-keys.json, github_token.txt, key.yaml, but not
//     tokenizer.json or keymap.json). Source files are never excluded by
//     name words, so tokenize.py, secrets.py and keymap.go are read;
//   - whatever the repository's .gitignore files ignore ([GitIgnore]);
//   - content holding a private key block, a token in a well-known format
//     (AWS, GitHub, GitLab, Slack, Google, Stripe, npm, "sk-" keys) or an
//     obvious credential assignment (password = "hunter22",
//     AWS_SECRET_ACCESS_KEY=..., api_key: sk-...), placeholders aside; see
//     [Rules.SensitiveContent].
//
// Walk also skips symbolic links and files over MaxFileBytes (4 MiB).
//
// It is pure: it decides how a file is split and which files are skipped,
// and appends no events (package codememory records the chunks).
package chunking

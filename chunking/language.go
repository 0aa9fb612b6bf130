package chunking

import (
	"path"
	"strings"
)

// Language values returned by [Language].
const (
	LangPython     = "python"     // .py .pyi .pyw
	LangGo         = "go"         // .go
	LangJavaScript = "javascript" // .js .mjs .cjs .jsx
	LangTypeScript = "typescript" // .ts .mts .cts
	LangTSX        = "tsx"        // .tsx
	LangRust       = "rust"       // .rs
	LangJava       = "java"       // .java
	LangMarkdown   = "markdown"   // .md .markdown .mdown .mkd .mdx
	LangText       = "text"       // any other file not known to be binary
)

// languageByExt maps a lowercase file extension to its language.
var languageByExt = map[string]string{
	".py": LangPython, ".pyi": LangPython, ".pyw": LangPython,
	".go": LangGo,
	".js": LangJavaScript, ".mjs": LangJavaScript, ".cjs": LangJavaScript, ".jsx": LangJavaScript,
	".ts": LangTypeScript, ".mts": LangTypeScript, ".cts": LangTypeScript,
	".tsx":  LangTSX,
	".rs":   LangRust,
	".java": LangJava,
	".md":   LangMarkdown, ".markdown": LangMarkdown, ".mdown": LangMarkdown, ".mkd": LangMarkdown, ".mdx": LangMarkdown,
}

// binaryExts are extensions of files that are never text: images, media,
// archives, compiled objects, fonts, databases and documents.
var binaryExts = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".bmp": true, ".ico": true, ".webp": true,
	".tif": true, ".tiff": true, ".psd": true, ".heic": true, ".avif": true,
	".mp3": true, ".mp4": true, ".wav": true, ".ogg": true, ".flac": true, ".avi": true, ".mov": true,
	".mkv": true, ".webm": true, ".m4a": true,
	".zip": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true,
	".rar": true, ".tar": true, ".jar": true, ".war": true, ".ear": true, ".whl": true, ".egg": true,
	".exe": true, ".dll": true, ".so": true, ".dylib": true, ".a": true, ".o": true, ".obj": true,
	".lib": true, ".bin": true, ".class": true, ".pyc": true, ".pyo": true, ".pyd": true, ".wasm": true,
	".rlib": true, ".test": true,
	".ttf": true, ".otf": true, ".woff": true, ".woff2": true, ".eot": true,
	".pdf": true, ".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true,
	".sqlite": true, ".sqlite3": true, ".db": true, ".parquet": true, ".npy": true, ".npz": true,
	".pkl": true, ".pickle": true, ".pt": true, ".pth": true, ".onnx": true, ".safetensors": true,
	".h5": true, ".ckpt": true,
}

// Language returns the language of the file at path, judged by its name:
// "python", "go", "javascript", "typescript", "tsx", "rust", "java",
// "markdown", "text" for any other (possibly) textual file, or "" for a
// file type known to be binary (images, archives, objects, fonts, ...).
func Language(p string) string {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	ext := strings.ToLower(path.Ext(base))
	if l, ok := languageByExt[ext]; ok {
		return l
	}
	if binaryExts[ext] {
		return ""
	}
	return LangText
}

// isCode reports whether lang is parsed with tree-sitter.
func isCode(lang string) bool {
	switch lang {
	case LangPython, LangGo, LangJavaScript, LangTypeScript, LangTSX, LangRust, LangJava:
		return true
	}
	return false
}

// testDirs are directory names whose files are tests.
var testDirs = map[string]bool{"test": true, "tests": true, "__tests__": true, "testdata": true}

// IsTestPath reports whether the file at relPath is a test file by the
// usual conventions: *_test.go, test_*.py, *_test.py, *.test.ts, *.spec.js,
// *Test.java, *Tests.java, conftest.py, or a file under test/, tests/,
// __tests__/ or testdata/ (which includes Maven's src/test/).
func IsTestPath(relPath string) bool {
	p := strings.ReplaceAll(relPath, "\\", "/")
	dir, base := path.Split(p)
	for _, seg := range strings.Split(strings.Trim(dir, "/"), "/") {
		if testDirs[strings.ToLower(seg)] {
			return true
		}
	}
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch strings.ToLower(ext) {
	case ".go":
		return strings.HasSuffix(stem, "_test")
	case ".py", ".pyi":
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "conftest"
	case ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts":
		return strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec") ||
			strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "-test")
	case ".java":
		return strings.HasSuffix(stem, "Test") || strings.HasSuffix(stem, "Tests") || strings.HasSuffix(stem, "IT")
	case ".rs":
		return strings.HasSuffix(stem, "_test") || strings.HasSuffix(stem, "_tests")
	}
	return false
}

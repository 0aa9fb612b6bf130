package trellis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxRequestBytes bounds one request body on every transport (1 MiB).
const MaxRequestBytes = 1 << 20

// jsonSpace is JSON's insignificant whitespace.
const jsonSpace = " \t\r\n"

// DecodeRequest decodes a JSON request body into v, a pointer to a request
// struct, strictly, with the same rules on every transport: at most
// MaxRequestBytes, valid UTF-8 (checked on the raw bytes first: encoding/json
// would silently replace invalid sequences), exactly one JSON object whose
// keys are v's JSON field names (case-sensitive, each at most once), no
// trailing data. Failures are invalid-input errors naming the field.
func DecodeRequest(raw []byte, v any) error {
	if len(raw) > MaxRequestBytes {
		return FieldError("body", "is %d bytes; at most %d allowed", len(raw), MaxRequestBytes)
	}
	if !utf8.Valid(raw) {
		return FieldError("body", "is not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(raw, jsonSpace)
	if len(trimmed) == 0 {
		return FieldError("body", "is empty; send a JSON object")
	}
	if trimmed[0] != '{' {
		return FieldError("body", "must be a JSON object")
	}
	if err := checkKeys(raw, jsonFields(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	return nil
}

// checkKeys walks the top-level object of raw: every key must be one of
// known (exactly) and appear once, and nothing but whitespace may follow
// the object.
func checkKeys(raw []byte, known []string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // the opening brace, checked by the caller
		return decodeError(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return decodeError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return FieldError("body", "is not valid JSON: expected an object key, found %v", tok)
		}
		if !slices.Contains(known, key) {
			return unknownField(key, known)
		}
		if seen[key] {
			return FieldError(key, "appears more than once")
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return decodeError(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return decodeError(err)
	}
	off := dec.InputOffset()
	if rest := bytes.TrimLeft(raw[off:], jsonSpace); len(rest) > 0 {
		return FieldError("body", "has data after the JSON object (at byte %d); send exactly one object", int(off)+len(raw[off:])-len(rest))
	}
	return nil
}

// unknownField is the error for a key the request type does not have.
func unknownField(key string, known []string) error {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return FieldError(key, "unknown field %q; field names are case-sensitive: did you mean %q?", key, k)
		}
	}
	return FieldError(key, "unknown field %q; known fields: %s", key, strings.Join(known, ", "))
}

// decodeError turns an encoding/json error into an invalid-input error
// naming the field when there is one.
func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &Error{Code: CodeInvalid, Field: "body", Message: fmt.Sprintf("is not valid JSON: %s (at byte %d)", syn.Error(), syn.Offset), Err: err}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return &Error{Code: CodeInvalid, Field: field, Message: fmt.Sprintf("must be %s, not JSON %s", typeName(typ.Type), typ.Value), Err: err}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Code: CodeInvalid, Field: "body", Message: "is not valid JSON: unexpected end of input", Err: err}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return &Error{Code: CodeInvalid, Field: name, Message: fmt.Sprintf("unknown field %q", name), Err: err}
	}
	return &Error{Code: CodeInvalid, Field: "body", Message: "is not valid JSON: " + strings.TrimPrefix(msg, "json: "), Err: err}
}

// typeName describes a Go type in JSON terms for error messages.
func typeName(t reflect.Type) string {
	if t == nil {
		return "a different JSON type"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "a "), "an ") + "s"
	case reflect.Map:
		return "an object of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "a "), "an ") + "s"
	case reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// jsonFields lists the JSON field names of the struct v points to.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// An embedded struct's fields are the outer object's.
			names = append(names, jsonFields(reflect.New(f.Type).Interface())...)
			continue
		}
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

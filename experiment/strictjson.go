package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// checkObject refuses what encoding/json would silently accept in a
// configuration: an empty input, null or anything but an object at the
// top, null values, and an object that repeats a key (json keeps the last,
// merging nested objects: W from one "graph", K and L from another).
func checkObject(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return errors.New("empty: want a JSON object")
	}
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want a JSON object, got %v", describe(tok))
	}
	return walkObject(dec, "")
}

// walkObject checks the rest of an object whose '{' was read.
func walkObject(dec *json.Decoder, path string) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		key := tok.(string)
		field := join(path, key)
		if seen[key] {
			return fmt.Errorf("%s: given twice", field)
		}
		seen[key] = true
		if err := walkValue(dec, field); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// walkValue checks one value at path.
func walkValue(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	switch t := tok.(type) {
	case nil:
		return fmt.Errorf("%s: null: give a value or leave the key out", path)
	case json.Delim:
		switch t {
		case '{':
			return walkObject(dec, path)
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, err := dec.Token() // ']'
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(tok json.Token) string {
	switch tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// jsonError says an encoding/json error in the configuration's own terms:
// the field's JSON path and what it wants, not Go's types.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := te.Type.String()
		switch {
		case strings.HasPrefix(want, "uint"):
			want = "an integer >= 0"
		case strings.HasPrefix(want, "int"):
			want = "an integer"
		case strings.HasPrefix(want, "float"):
			want = "a number"
		case want == "bool":
			want = "true or false"
		case want == "string", strings.HasSuffix(want, "Kind"), strings.HasSuffix(want, "Model"):
			want = "a string"
		case strings.HasPrefix(want, "[]"):
			want = "an array"
		default:
			want = "an object"
		}
		field := te.Field
		if field == "" {
			field = "the configuration"
		}
		return fmt.Errorf("%s: got a JSON %s, want %s", field, te.Value, want)
	}
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", msg)
	}
	return err
}

// CheckKeyCase refuses a key of the JSON object data that names a field
// of v's type (a struct, or a pointer to one) only when case is ignored.
// encoding/json matches keys to fields without case, so "Graph" would
// fill graph while the keys given are read by their exact names
// (Given.Has), and "Seed" beside "seed" would be dropped without a word.
// Keys that name no field at all are left to DisallowUnknownFields. It
// follows nested objects, arrays and maps of structs; a field whose type
// decodes itself (json.Unmarshaler, json.RawMessage) is not entered.
func CheckKeyCase(data []byte, v any) error {
	return keyCase(data, reflect.TypeOf(v), "")
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

func keyCase(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return nil // not an array: the decoder says so
		}
		for i, it := range items {
			if err := keyCase(it, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := keyCase(m[k], t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if f, ok := JSONField(t, k); ok {
				if err := keyCase(m[k], f.Type, join(path, k)); err != nil {
					return err
				}
				continue
			}
			for _, f := range JSONFields(t) {
				if strings.EqualFold(JSONName(f), k) {
					return fmt.Errorf("%s: keys are case-sensitive: want %s", join(path, k), join(path, JSONName(f)))
				}
			}
		}
	}
	return nil
}

// JSONFields are the fields of struct t that encoding/json encodes as keys:
// the fields of an untagged embedded struct (trainers.TransformerOptions
// embeds nn.TransformerArch) are promoted to t's level, as json does.
func JSONFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, JSONFields(f.Type)...)
			continue
		}
		if JSONName(f) != "" {
			out = append(out, f)
		}
	}
	return out
}

// JSONField finds the field of struct t whose JSON key is key.
func JSONField(t reflect.Type, key string) (reflect.StructField, bool) {
	for _, f := range JSONFields(t) {
		if JSONName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// JSONName is a field's JSON key ("" when it has none).
func JSONName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}

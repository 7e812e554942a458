"""The served kinds' schemas and what is checked or merged by them.

The schemas come from the `kubernetes` client's models (`definitions`); the OpenAPI documents kubectl reads are
built from them and the served paths (`paths`, `render`, `openapiv2`, `openapiv3`, and `customopenapi` for
CRDs). The same schemas refuse a field of the wrong JSON type (`decodetypes`), find unknown fields for
`fieldValidation` (`fieldvalidation`), and drive `managedFields` and server-side apply (`fieldmanager`).
"""

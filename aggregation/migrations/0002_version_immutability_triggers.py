"""PostgreSQL triggers that keep a ready dataset version unchanged.

A ready version's number, status, options, manifest and row count never change, and it is never
deleted; the rows and files of a ready version are never updated or deleted, and a built
version (ready, with a manifest) takes no new rows or files. The note stays editable. Other
databases rely on the service alone.
"""

from django.db import migrations

FORWARD = """
CREATE OR REPLACE FUNCTION aggregation_version_frozen() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF OLD.status = 'ready' THEN
            RAISE EXCEPTION 'dataset version % is ready and cannot be deleted', OLD.id
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN OLD;
    END IF;
    IF OLD.status = 'ready' AND (
        NEW.status, NEW.number, NEW.project_id, NEW.manifest, NEW.row_count,
        NEW.include_votes, NEW.include_seeds
    ) IS DISTINCT FROM (
        OLD.status, OLD.number, OLD.project_id, OLD.manifest, OLD.row_count,
        OLD.include_votes, OLD.include_seeds
    ) THEN
        RAISE EXCEPTION 'dataset version % is ready and cannot change', OLD.id
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION aggregation_version_part_frozen() RETURNS trigger AS $$
DECLARE
    target bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF EXISTS (SELECT 1 FROM aggregation_datasetversion v WHERE v.id = NEW.version_id
                   AND v.status = 'ready' AND v.manifest <> '{}'::jsonb) THEN
            RAISE EXCEPTION 'dataset version % is built and takes no new %', NEW.version_id,
                TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;
    target := OLD.version_id;
    IF EXISTS (SELECT 1 FROM aggregation_datasetversion v WHERE v.id = target
               AND v.status = 'ready') THEN
        RAISE EXCEPTION 'dataset version % is ready: its % cannot change', target, TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER aggregation_version_frozen BEFORE UPDATE OR DELETE ON aggregation_datasetversion
    FOR EACH ROW EXECUTE FUNCTION aggregation_version_frozen();
CREATE TRIGGER aggregation_row_frozen BEFORE INSERT OR UPDATE OR DELETE ON aggregation_datasetrow
    FOR EACH ROW EXECUTE FUNCTION aggregation_version_part_frozen();
CREATE TRIGGER aggregation_file_frozen BEFORE INSERT OR UPDATE OR DELETE ON aggregation_datasetfile
    FOR EACH ROW EXECUTE FUNCTION aggregation_version_part_frozen();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS aggregation_file_frozen ON aggregation_datasetfile;
DROP TRIGGER IF EXISTS aggregation_row_frozen ON aggregation_datasetrow;
DROP TRIGGER IF EXISTS aggregation_version_frozen ON aggregation_datasetversion;
DROP FUNCTION IF EXISTS aggregation_version_part_frozen();
DROP FUNCTION IF EXISTS aggregation_version_frozen();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # A plain cursor: the function bodies hold "%" and are not parameter templates.
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("aggregation", "0001_initial")]

    operations = [migrations.RunPython(forward, backward)]

"""A version's rows cheaper to freeze: the row JSON as text, one insert check per statement.

The row JSON is only ever read whole, so it is stored as the exported line (text) instead of
JSONB. The version's own index on the rows goes: the two indexes of the table lead with the
version. On PostgreSQL the check that a built version takes no new rows runs once per insert
statement over the inserted rows (a transition table) instead of once per row; updates and
deletes keep the row trigger.
"""

import django.db.models.deletion
from django.db import migrations, models

import core.db

FORWARD = """
CREATE OR REPLACE FUNCTION aggregation_rows_insert_frozen() RETURNS trigger AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM aggregation_datasetversion v
               WHERE v.id IN (SELECT DISTINCT version_id FROM inserted)
               AND v.status = 'ready' AND v.manifest <> '{}'::jsonb) THEN
        RAISE EXCEPTION 'a built dataset version takes no new %', TG_TABLE_NAME
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS aggregation_row_frozen ON aggregation_datasetrow;
CREATE TRIGGER aggregation_row_frozen BEFORE UPDATE OR DELETE ON aggregation_datasetrow
    FOR EACH ROW EXECUTE FUNCTION aggregation_version_part_frozen();
CREATE TRIGGER aggregation_rows_insert_frozen AFTER INSERT ON aggregation_datasetrow
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION aggregation_rows_insert_frozen();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS aggregation_rows_insert_frozen ON aggregation_datasetrow;
DROP TRIGGER IF EXISTS aggregation_row_frozen ON aggregation_datasetrow;
CREATE TRIGGER aggregation_row_frozen BEFORE INSERT OR UPDATE OR DELETE ON aggregation_datasetrow
    FOR EACH ROW EXECUTE FUNCTION aggregation_version_part_frozen();
DROP FUNCTION IF EXISTS aggregation_rows_insert_frozen();
"""


def data_text(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE aggregation_datasetrow ALTER COLUMN data TYPE text USING data::text"
        )


def data_jsonb(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            "ALTER TABLE aggregation_datasetrow ALTER COLUMN data TYPE jsonb USING data::jsonb"
        )


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # A plain cursor: the function body holds "%" and is not a parameter template.
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(FORWARD)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(BACKWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("aggregation", "0013_review_queue_cells"),
    ]

    operations = [
        # Elsewhere (SQLite) a JSON field already is text: only PostgreSQL's column changes.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="datasetrow",
                    name="data",
                    field=core.db.JsonTextField(
                        help_text="The full exported row (image as its relative path)."
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(data_text, data_jsonb)],
        ),
        migrations.AlterField(
            model_name="datasetrow",
            name="version",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="rows",
                to="aggregation.datasetversion",
            ),
        ),
        migrations.RunPython(forward, backward),
    ]
